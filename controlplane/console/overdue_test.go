package console_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/console"
	"github.com/vidfarm/vidfarm/models"
	"github.com/vidfarm/vidfarm/scheduler"
)

// TestQueuePageOverdue completes ten renders at once over the agent
// protocol, leases an eleventh and holds it: the queue page (over real
// HTTP, live) lists it as past the p99 of its class once it has run longer
// than the slowest of the ten, with the figures it was judged by (the
// minimum of samples is scheduler.TestOverdue's).
func TestQueuePageOverdue(t *testing.T) {
	f := startFarm(t)
	model := models.IDs()[0]
	cred := f.register("gpu-o", []string{model})
	key := f.account()
	base := "http://" + f.srv.AdminAddr()
	ck, _ := loginCookie(t, base)
	renders := 0
	for renders < console.OverdueMinSamples {
		f.video(key, model)
		for range 2 { // its render, then its finalize
			if f.run(cred).Kind == scheduler.KindRender {
				renders++
			}
		}
	}
	slow := f.video(key, model)
	held := f.lease(cred)
	if held.Video.ID != slow || held.Kind != scheduler.KindRender {
		t.Fatalf("leased %s of %s, want the render of %s", held.Kind, held.Video.ID, slow)
	}
	_, ch := stream(t, base+"/console/api/events?page=queue", ck)
	data := next(t, ch, "snapshot", 10*time.Second, func(d string) bool { return strings.Contains(d, `"video_id":"`+slow+`","task_id"`) })
	var q console.QueueJSON
	must(t, json.Unmarshal([]byte(data), &q), "queue snapshot")
	o := q.Overdue[0]
	if len(q.Overdue) != 1 || o.Node != "gpu-o" || o.TaskID != held.TaskID || o.Kind != "render" || o.Model != model ||
		o.Samples != console.OverdueMinSamples || o.RunningSeconds <= o.P99Seconds || o.Attempt != 1 {
		t.Fatalf("overdue %+v, want the held render past the p99 of %d renders", q.Overdue, console.OverdueMinSamples)
	}
}
