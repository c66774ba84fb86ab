package agentapi_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

// A node still running a task whose video the owner canceled learns it from
// its next report or upload as a stale lease (drop the task and its result),
// not a 404, which the agent logged as an error on every cancel mid-render.
// A task name a running video does not have, or a task of no video, is
// still not found.
func TestReportsOnAnEndedVideoAreStale(t *testing.T) {
	e := newEnv(t)
	cred := e.register("gpu-a").Credential
	vid := e.createVideo()
	a, r := e.lease(cred, 5)
	want(t, r, http.StatusOK, "")
	want(t, e.call("POST", taskPath(vid+"/nope", "progress"), cred, wire.ProgressRequest{Token: a.Token}), http.StatusNotFound, apierr.CodeNotFound)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := e.node.Apply(ctx, &fsm.CancelVideo{VideoID: vid, AccountID: "acct_test", Now: time.Now().UnixNano()}); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	for name, r := range map[string]resp{
		"progress": e.call("POST", taskPath(a.TaskID, "progress"), cred, wire.ProgressRequest{Token: a.Token, Percent: 50}),
		"complete": e.call("POST", taskPath(a.TaskID, "complete"), cred,
			wire.CompleteRequest{Token: a.Token, Artifacts: map[string]string{"clip.mp4": artifactKey(a, "clip.mp4")}}),
		"fail":   e.call("POST", taskPath(a.TaskID, "fail"), cred, wire.FailRequest{Token: a.Token, Reason: "the runner stopped"}),
		"upload": e.upload(cred, artifactKey(a, "clip.mp4"), "frames"),
	} {
		t.Run(name, func(t *testing.T) { want(t, r, http.StatusConflict, wire.CodeStaleLease) })
	}
	want(t, e.call("POST", taskPath("vid_unknown/render", "progress"), cred, wire.ProgressRequest{Token: a.Token}), http.StatusNotFound, apierr.CodeNotFound)
	want(t, e.upload(cred, "videos/vid_unknown/render/clip.mp4", "x"), http.StatusNotFound, apierr.CodeNotFound)
}
