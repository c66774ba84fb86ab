package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/admin"
	"github.com/vidfarm/vidfarm/controlplane/console"
	"github.com/vidfarm/vidfarm/controlplane/server"
	"github.com/vidfarm/vidfarm/models"
	"github.com/vidfarm/vidfarm/scheduler"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

// TestVideoPageTimings renders a video to the end through the agent
// protocol over real HTTP and checks that the console's video page, once
// the scheduler forgot the graph, still gives each finished task's kind,
// model, GPU kind and time, in the order they finished.
func TestVideoPageTimings(t *testing.T) {
	f := startFarm(t)
	model := models.IDs()[0]
	var reg wire.RegisterResponse
	f.agent("POST", "/agent/v1/register", agentToken, wire.RegisterRequest{Name: "gpu-t", Capacity: wire.Capacity{Hostname: "gpu-t",
		GPUs:     []scheduler.GPU{{ID: "GPU-0", MemoryTotalGB: 80, MemoryFreeGB: 79, Model: "NVIDIA H100 80GB HBM3"}, {ID: "GPU-1", MemoryTotalGB: 80, MemoryFreeGB: 79, Model: "NVIDIA H100 80GB HBM3"}},
		CPUSlots: 4, Tools: []string{"ffmpeg", "espeak-ng"}, Models: []string{model}, WarmModels: []string{model}}}, &reg)
	vid := f.video(f.account(), model)
	render := f.run(reg.Credential)
	fin := f.run(reg.Credential)

	base := "http://" + f.srv.AdminAddr()
	if st, body, _ := send(t, "GET", base+"/console/api/videos/"+vid, "", nil, nil); st != http.StatusUnauthorized {
		t.Fatalf("video without a session: %d %s", st, body)
	}
	ck, _ := loginCookie(t, base)
	st, body, _ := send(t, "GET", base+"/console/api/videos/"+vid, "", ck, nil)
	var v console.VideoJSON
	if st != http.StatusOK || json.Unmarshal([]byte(body), &v) != nil {
		t.Fatalf("video: %d %s", st, body)
	}
	if v.Status != "completed" || len(v.Tasks) != 0 {
		t.Fatalf("video %s with %d tasks, want completed and the graph forgotten", v.Status, len(v.Tasks))
	}
	want := []admin.TimingJSON{{Kind: string(render.Kind), Model: model, GPU: "NVIDIA H100 80GB HBM3"}, {Kind: string(fin.Kind)}}
	if len(v.Timings) != len(want) {
		t.Fatalf("timings %+v, want %d", v.Timings, len(want))
	}
	for i, w := range want {
		got := v.Timings[i]
		if got.Kind != w.Kind || got.Model != w.Model || got.GPU != w.GPU || got.Seconds < 0 {
			t.Errorf("timing %d: %+v, want %+v and a time", i, got, w)
		}
	}
}

// TestVideoPageWakesOnChange follows a video's page with pages rebuilt only
// every minute: the render's completion still reaches the stream at once,
// through the state's watch of the video.
func TestVideoPageWakesOnChange(t *testing.T) {
	f := startFarm(t, func(c *server.Config) { c.ConsoleEventsInterval = time.Minute })
	model := models.IDs()[0]
	cred := f.register("gpu-w", []string{model})
	vid := f.video(f.account(), model)
	base := "http://" + f.srv.AdminAddr()
	ck, _ := loginCookie(t, base)
	_, ch := stream(t, base+"/console/api/events?page=video&id="+vid, ck)
	next(t, ch, "snapshot", 5*time.Second, func(d string) bool { return strings.Contains(d, `"status":"queued"`) })
	f.run(cred) // the render
	data := next(t, ch, "snapshot", 10*time.Second, func(d string) bool { return strings.Contains(d, `"timings":[{`) })
	var v console.VideoJSON
	must(t, json.Unmarshal([]byte(data), &v), "video snapshot")
	if len(v.Timings) != 1 || v.Timings[0].Kind != string(scheduler.KindRender) {
		t.Fatalf("video after its render: %s with timings %+v, want the render's", v.Status, v.Timings)
	}
}

// run leases the node's next task and completes it with the files its
// kind leaves (a render's clip, a finalize's video and poster).
func (f *farm) run(cred string) wire.Assignment {
	f.t.Helper()
	a := f.lease(cred)
	files := []string{"clip.mp4"}
	if a.Kind == scheduler.KindFinalize {
		files = []string{wire.ArtifactVideo, wire.ArtifactPoster}
	}
	arts := map[string]string{}
	for _, name := range files {
		key := "videos/" + a.Video.ID + "/" + a.Name + "/" + name
		f.agent("PUT", "/agent/v1/blobs/"+key+"?lease_token="+strconv.FormatUint(a.Token, 10), cred, []byte("bytes of "+key), nil)
		arts[name] = key
	}
	f.agent("POST", "/agent/v1/tasks/"+url.PathEscape(a.TaskID)+"/complete", cred,
		wire.CompleteRequest{Token: a.Token, Artifacts: arts, DurationSeconds: float64(a.Video.DurationSeconds)}, nil)
	return a
}

// refundFarm makes, on f, a video canceled once its render is done (a
// cancel refunds the tasks not done) and one failed by an operator, and
// returns their ids with what each was charged and what the public API
// said the cancel refunded.
func refundFarm(t *testing.T, f *farm) (canceled, failed string, charged, refunded int64) {
	t.Helper()
	model := models.IDs()[0]
	cred := f.register("gpu-r", []string{model})
	key := f.account()
	canceled, failed = f.video(key, model), f.video(key, model)
	if a := f.run(cred); a.Video.ID != canceled || a.Kind != scheduler.KindRender {
		t.Fatalf("ran %s of %s, want the render of %s", a.TaskID, a.Video.ID, canceled)
	}
	var c struct {
		CreditsCharged int64 `json:"credits_charged"`
		Cancellation   struct {
			CreditsRefunded int64 `json:"credits_refunded"`
		} `json:"cancellation"`
	}
	f.call("POST", f.srv.PublicURL(), "/v1/videos/"+canceled+"/cancel", key, nil, &c)
	if c.Cancellation.CreditsRefunded <= 0 || c.Cancellation.CreditsRefunded >= c.CreditsCharged {
		t.Fatalf("cancel after the render: charged %d, refunded %d, want a partial refund", c.CreditsCharged, c.Cancellation.CreditsRefunded)
	}
	if _, err := f.admin.FailVideo(context.Background(), failed, "operator test"); err != nil {
		t.Fatalf("fail %s: %v", failed, err)
	}
	return canceled, failed, c.CreditsCharged, c.Cancellation.CreditsRefunded
}

// TestVideoPageRefunds: the video page's JSON says how many credits went
// back, not only that some did: part of the charge for a video canceled
// mid-render, all of it for a failed one.
func TestVideoPageRefunds(t *testing.T) {
	f := startFarm(t)
	canceled, failed, charged, refunded := refundFarm(t, f)
	base := "http://" + f.srv.AdminAddr()
	ck, _ := loginCookie(t, base)
	for _, tc := range []struct {
		id, status string
		refunded   int64
	}{
		{canceled, "canceled", refunded},
		{failed, "failed", charged},
	} {
		st, body, _ := send(t, "GET", base+"/console/api/videos/"+tc.id, "", ck, nil)
		var v console.VideoJSON
		if st != http.StatusOK || json.Unmarshal([]byte(body), &v) != nil {
			t.Fatalf("video %s: %d %s", tc.id, st, body)
		}
		if v.Status != tc.status || v.CreditsCharged != charged || !v.CreditsRefunded || v.RefundedCredits != tc.refunded {
			t.Errorf("%s video: %s, charged %d, refunded %t %d; want charged %d, refunded %d",
				tc.status, v.Status, v.CreditsCharged, v.CreditsRefunded, v.RefundedCredits, charged, tc.refunded)
		}
	}
}
