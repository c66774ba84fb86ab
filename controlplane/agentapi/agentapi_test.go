package agentapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/agentapi"
	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/controlplane/raftnode"
	"github.com/vidfarm/vidfarm/models"
	"github.com/vidfarm/vidfarm/scheduler"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

func TestRegisterNeedsTheAgentToken(t *testing.T) {
	e := newEnv(t)
	body := wire.RegisterRequest{Name: "gpu-1", Capacity: capacity("gpu-1")}
	want(t, e.call("POST", "/agent/v1/register", "wrong-token", body), http.StatusUnauthorized, apierr.CodeUnauthorized)
	want(t, e.call("POST", "/agent/v1/register", "", body), http.StatusUnauthorized, apierr.CodeUnauthorized)
	want(t, e.call("POST", "/agent/v1/register", agentToken, []byte("{not json")), http.StatusBadRequest, apierr.CodeInvalidRequest)
	bad := capacity("gpu-1")
	bad.GPUs = append(bad.GPUs, bad.GPUs[0]) // duplicate GPU id
	want(t, e.call("POST", "/agent/v1/register", agentToken, wire.RegisterRequest{Name: "gpu-1", Capacity: bad}),
		http.StatusBadRequest, apierr.CodeInvalidRequest)
	if n := len(e.fsm.Nodes()); n != 0 {
		t.Fatalf("%d nodes registered by refused requests", n)
	}

	reg := e.register("gpu-1")
	if !strings.HasPrefix(reg.NodeID, "node_") || !strings.HasPrefix(reg.Credential, agentapi.CredentialPrefix) ||
		reg.LeaseSeconds != 30 || reg.HeartbeatSeconds != 5 {
		t.Fatalf("register answered %+v", reg)
	}
	n, ok := e.fsm.NodeByCredHash(agentapi.HashCredential(reg.Credential))
	if !ok || n.ID != reg.NodeID || n.Name != "gpu-1" {
		t.Fatalf("NodeByCredHash = %+v, %v", n, ok)
	}

	// Every other call wants a credential the FSM knows.
	want(t, e.call("POST", "/agent/v1/heartbeat", "", wire.HeartbeatRequest{}), http.StatusUnauthorized, apierr.CodeUnauthorized)
	want(t, e.call("POST", "/agent/v1/heartbeat", agentToken, wire.HeartbeatRequest{}), http.StatusUnauthorized, apierr.CodeUnauthorized)
	want(t, e.call("POST", "/agent/v1/heartbeat", "vfn_forged", wire.HeartbeatRequest{}), http.StatusUnauthorized, apierr.CodeUnauthorized)

	// The agent registering again under its name, with the credential it
	// held, replaces its node: the old credential is dead.
	again := e.registerAgain("gpu-1", reg.Credential)
	want(t, e.call("POST", "/agent/v1/heartbeat", reg.Credential, wire.HeartbeatRequest{}), http.StatusUnauthorized, apierr.CodeUnauthorized)
	want(t, e.call("POST", "/agent/v1/heartbeat", again.Credential, wire.HeartbeatRequest{}), http.StatusOK, "")
}

// TestRegisterUnderALiveNodesName: a second machine given a live node's
// name is refused (409 node_name_in_use, retryable, naming the node) with
// no credential or another's, and the live node keeps its credential; once
// the node is down, the name is free again.
func TestRegisterUnderALiveNodesName(t *testing.T) {
	e := newEnv(t)
	first := e.register("gpu-1")
	other := e.register("gpu-2")
	for name, prev := range map[string]string{"no credential": "", "another node's": other.Credential, "a forged one": "vfn_forged"} {
		r := e.registerAs("gpu-1", capacity("gpu-1"), prev)
		want(t, r, http.StatusConflict, apierr.CodeNodeNameInUse)
		var env struct {
			Error struct {
				Message   string         `json:"message"`
				Retryable bool           `json:"retryable"`
				Details   map[string]any `json:"details"`
			} `json:"error"`
		}
		if err := json.Unmarshal(r.body, &env); err != nil || !env.Error.Retryable || env.Error.Details["node_id"] != first.NodeID ||
			!strings.Contains(env.Error.Message, "--name") {
			t.Fatalf("%s: refusal %s does not name the live node and what to do", name, r.body)
		}
	}
	want(t, e.call("POST", "/agent/v1/heartbeat", first.Credential, wire.HeartbeatRequest{}), http.StatusOK, "")
	if n := len(e.fsm.Nodes()); n != 2 {
		t.Fatalf("%d nodes after the refusals, want 2", n)
	}

	// Silent past the node timeout, the node is down and its name free.
	if _, err := fsm.Do(context.Background(), e.node, &fsm.ExpireLeases{Now: time.Now().Add(scheduler.DefaultNodeTimeout + time.Minute).UnixNano()}); err != nil {
		t.Fatal(err)
	}
	standby := e.register("gpu-1")
	want(t, e.call("POST", "/agent/v1/heartbeat", first.Credential, wire.HeartbeatRequest{}), http.StatusUnauthorized, apierr.CodeUnauthorized)
	want(t, e.call("POST", "/agent/v1/heartbeat", standby.Credential, wire.HeartbeatRequest{}), http.StatusOK, "")
}

func TestRegistrationDisabledWithoutToken(t *testing.T) {
	e := newEnv(t, func(c *agentapi.Config) { c.Token = "" })
	r := e.call("POST", "/agent/v1/register", "", wire.RegisterRequest{Name: "gpu-1", Capacity: capacity("gpu-1")})
	want(t, r, http.StatusUnauthorized, apierr.CodeUnauthorized)
	if !contains(string(r.body), "--agent-token") {
		t.Fatalf("refusal does not say how to enable registration: %s", r.body)
	}
}

// One node takes a manual video through render and finalize.
func TestTaskLifecycle(t *testing.T) {
	e := newEnv(t)
	reg := e.register("gpu-1")
	cred := reg.Credential

	r := e.call("POST", "/agent/v1/heartbeat", cred, wire.HeartbeatRequest{})
	want(t, r, http.StatusOK, "")

	// Nothing queued: an immediate answer with wait=0, and one after about a second with wait=1.
	if _, r := e.lease(cred, 0); r.status != http.StatusNoContent {
		t.Fatalf("lease with nothing queued: %s", r)
	}
	start := time.Now()
	if _, r := e.lease(cred, 1); r.status != http.StatusNoContent {
		t.Fatalf("lease?wait=1 with nothing queued: %s", r)
	}
	if d := time.Since(start); d < 900*time.Millisecond || d > 10*time.Second {
		t.Fatalf("lease?wait=1 answered after %v", d)
	}

	vid := e.createVideo()
	render, r := e.lease(cred, 5)
	want(t, r, http.StatusOK, "")
	if render.Name != scheduler.NameRender || render.Kind != scheduler.KindRender || render.Attempt != 1 ||
		render.TaskID != vid+"/render" || render.Token == 0 || len(render.GPUIDs) != 1 || !render.Deadline.After(time.Now()) ||
		render.Model != models.AutoSceneModel {
		t.Fatalf("first assignment: %+v", render)
	}
	if v := render.Video; v.ID != vid || v.Mode != fsm.ModeManual || v.Model != models.AutoSceneModel || v.Resolution != "720p" ||
		v.Prompt != "a red fox in the snow" || v.DurationSeconds != 5 || v.AspectRatio != "16:9" {
		t.Fatalf("assignment's video: %+v", v)
	}
	if len(render.Inputs) != 0 {
		t.Fatalf("render has inputs %v", render.Inputs)
	}
	if v, _ := e.fsm.Video("", vid); v.Status != fsm.StatusProcessing {
		t.Fatalf("video status after lease: %s", v.Status)
	}

	want(t, e.call("POST", taskPath(render.TaskID, "progress"), cred, wire.ProgressRequest{Token: render.Token, Percent: 40}), http.StatusNoContent, "")
	// The unescaped form of the task id works too.
	want(t, e.call("POST", "/agent/v1/tasks/"+render.TaskID+"/progress", cred, wire.ProgressRequest{Token: render.Token, Percent: 50}), http.StatusNoContent, "")
	if v, _ := e.fsm.Video("", vid); v.Percent <= 0 {
		t.Fatalf("video percent after progress: %d", v.Percent)
	}
	want(t, e.call("POST", taskPath(render.TaskID, "progress"), cred, wire.ProgressRequest{Token: render.Token, Percent: 101}), http.StatusBadRequest, apierr.CodeInvalidRequest)
	want(t, e.call("POST", taskPath(render.TaskID, "progress"), cred, []byte(`{"token": "x"}`)), http.StatusBadRequest, apierr.CodeInvalidRequest)
	want(t, e.call("POST", taskPath(vid+"/nope", "progress"), cred, wire.ProgressRequest{Token: render.Token}), http.StatusNotFound, apierr.CodeNotFound)

	// A heartbeat renews the lease; a stale token in it comes back as stale.
	r = e.call("POST", "/agent/v1/heartbeat", cred, wire.HeartbeatRequest{Leases: []wire.LeaseReport{
		{TaskID: render.TaskID, Token: render.Token, Percent: 60},
		{TaskID: render.TaskID, Token: render.Token + 100},
	}})
	want(t, r, http.StatusOK, "")
	var hb wire.HeartbeatResponse
	if err := json.Unmarshal(r.body, &hb); err != nil || len(hb.Stale) != 1 || hb.Stale[0] != render.TaskID {
		t.Fatalf("heartbeat answered %s", r.body)
	}

	// Completing with an artifact that was never uploaded is refused.
	clip := artifactKey(render, "clip.mp4")
	complete := wire.CompleteRequest{Token: render.Token, Artifacts: map[string]string{"clip.mp4": clip}}
	r = e.call("POST", taskPath(render.TaskID, "complete"), cred, complete)
	want(t, r, http.StatusBadRequest, apierr.CodeInvalidRequest)
	if !contains(string(r.body), "not uploaded") {
		t.Fatalf("missing artifact refusal: %s", r.body)
	}
	// So is an artifact outside the task's prefix.
	r = e.call("POST", taskPath(render.TaskID, "complete"), cred,
		wire.CompleteRequest{Token: render.Token, Artifacts: map[string]string{"clip.mp4": "videos/" + vid + "/finalize/clip.mp4"}})
	want(t, r, http.StatusBadRequest, apierr.CodeInvalidRequest)

	want(t, e.upload(cred, clip, "frames of a fox"), http.StatusCreated, "")
	r = e.call("GET", "/agent/v1/blobs/"+clip, cred, nil)
	want(t, r, http.StatusOK, "")
	if string(r.body) != "frames of a fox" || r.header.Get("Content-Type") != "video/mp4" {
		t.Fatalf("GET blob: %s (%s)", r, r.header.Get("Content-Type"))
	}

	// A report with an old token is stale, and the task stays where it was.
	want(t, e.call("POST", taskPath(render.TaskID, "complete"), cred,
		wire.CompleteRequest{Token: render.Token - 1, Artifacts: complete.Artifacts}), http.StatusConflict, wire.CodeStaleLease)
	want(t, e.call("POST", taskPath(render.TaskID, "progress"), cred, wire.ProgressRequest{Token: render.Token + 1, Percent: 1}), http.StatusConflict, wire.CodeStaleLease)
	want(t, e.call("POST", taskPath(render.TaskID, "fail"), cred, wire.FailRequest{Token: render.Token + 1, Reason: "x"}), http.StatusConflict, wire.CodeStaleLease)

	want(t, e.call("POST", taskPath(render.TaskID, "complete"), cred, complete), http.StatusNoContent, "")
	// The holder's retry of its completion is answered the same.
	want(t, e.call("POST", taskPath(render.TaskID, "complete"), cred, complete), http.StatusNoContent, "")
	// After completion every report about the task is stale.
	want(t, e.call("POST", taskPath(render.TaskID, "progress"), cred, wire.ProgressRequest{Token: render.Token, Percent: 99}), http.StatusConflict, wire.CodeStaleLease)
	// Its blobs take no more uploads.
	want(t, e.upload(cred, clip, "late"), http.StatusConflict, wire.CodeStaleLease)

	// The next task is finalize, with render's clip as its input.
	fin, r := e.lease(cred, 5)
	want(t, r, http.StatusOK, "")
	if fin.Name != scheduler.NameFinalize || fin.Kind != scheduler.KindFinalize || fin.Inputs["render/clip.mp4"] != clip {
		t.Fatalf("second assignment: %+v", fin)
	}
	files := e.completeFinalize(cred, fin, 5.04)
	v, _ := e.fsm.Video("", vid)
	if v.Status != fsm.StatusCompleted || v.Outputs.Video != files[wire.ArtifactVideo] {
		t.Fatalf("video after finalize: status %s outputs %+v", v.Status, v.Outputs)
	}
	if _, r := e.lease(cred, 0); r.status != http.StatusNoContent {
		t.Fatalf("lease after the video completed: %s", r)
	}
}

// A waiting lease poll is woken by new work, long before its wait or the retry
// interval is over.
func TestLeaseLongPollWakesOnNewWork(t *testing.T) {
	e := newEnv(t, func(c *agentapi.Config) { c.LeaseRetry = time.Minute })
	cred := e.register("gpu-1").Credential

	type result struct {
		a wire.Assignment
		r resp
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		r := e.do(context.Background(), "POST", "/agent/v1/lease?wait=30", cred, nil)
		var a wire.Assignment
		_ = json.Unmarshal(r.body, &a)
		done <- result{a, r}
	}()
	// Wait until the poll has looked and found nothing, so the video arrives while it waits.
	select {
	case <-e.idle:
	case <-time.After(10 * time.Second):
		t.Fatal("the lease poll never tried to place")
	}
	vid := e.createVideo()
	select {
	case res := <-done:
		if res.r.status != http.StatusOK || res.a.Video.ID != vid {
			t.Fatalf("woken lease answered %s", res.r)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("woken lease took %v", d)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the lease poll was not woken by the new video")
	}
}

// A poll whose client hangs up stops waiting.
func TestLeaseLongPollEndsWhenClientLeaves(t *testing.T) {
	e := newEnv(t, func(c *agentapi.Config) { c.LeaseRetry = time.Minute })
	cred := e.register("gpu-1").Credential
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "POST", e.srv.URL+"/agent/v1/lease?wait=60", nil)
		req.Header.Set("Authorization", "Bearer "+cred)
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			res.Body.Close()
		}
		done <- err
	}()
	<-e.idle
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a cancelled poll got an answer")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("cancelling the poll did not end it")
	}
	// The server side of the poll ends too: Close returns only once every handler has.
	start := time.Now()
	e.srv.Close()
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the poll's handler went on for %v after its client left", d)
	}
}

func TestLeaseWaitValidation(t *testing.T) {
	e := newEnv(t)
	cred := e.register("gpu-1").Credential
	for _, w := range []string{"-1", "abc", "NaN"} {
		want(t, e.call("POST", "/agent/v1/lease?wait="+w, cred, nil), http.StatusBadRequest, apierr.CodeInvalidRequest)
	}
}

// Deregistering hands the node's leases back: another node gets the same task.
func TestDeregisterRequeues(t *testing.T) {
	e := newEnv(t)
	a := e.register("gpu-a")
	vid := e.createVideo()
	first, r := e.lease(a.Credential, 5)
	want(t, r, http.StatusOK, "")

	want(t, e.call("POST", "/agent/v1/deregister", a.Credential, nil), http.StatusNoContent, "")
	want(t, e.call("POST", "/agent/v1/heartbeat", a.Credential, wire.HeartbeatRequest{}), http.StatusUnauthorized, apierr.CodeUnauthorized)
	want(t, e.call("POST", "/agent/v1/lease?wait=0", a.Credential, nil), http.StatusUnauthorized, apierr.CodeUnauthorized)

	b := e.register("gpu-b")
	second, r := e.lease(b.Credential, 5)
	want(t, r, http.StatusOK, "")
	if second.TaskID != first.TaskID || second.Video.ID != vid || second.Token <= first.Token {
		t.Fatalf("after deregister: first %+v, second %+v", first, second)
	}
	if v, _ := e.fsm.Video("", vid); v.Status == fsm.StatusFailed {
		t.Fatalf("deregistering failed the video: %s", v.ErrorMessage)
	}
}

// A failed task goes back to the queue; the node that failed it is avoided
// while others could take it, so with one node it comes back to the same one.
func TestFailRequeues(t *testing.T) {
	e := newEnv(t)
	cred := e.register("gpu-1").Credential
	vid := e.createVideo()
	first, _ := e.lease(cred, 5)
	want(t, e.call("POST", taskPath(first.TaskID, "fail"), cred, wire.FailRequest{Token: first.Token, Reason: "CUDA out of memory"}), http.StatusNoContent, "")
	want(t, e.call("POST", taskPath(first.TaskID, "fail"), cred, wire.FailRequest{Token: first.Token, Reason: "again"}), http.StatusConflict, wire.CodeStaleLease)
	second, r := e.lease(cred, 5)
	want(t, r, http.StatusOK, "")
	if second.TaskID != first.TaskID || second.Attempt != 2 {
		t.Fatalf("after a failure: %+v", second)
	}
	if v, _ := e.fsm.Video("", vid); v.Status != fsm.StatusProcessing {
		t.Fatalf("video after one failure: %s", v.Status)
	}
}

// A failure the node says is permanent (the video's own input is
// unusable) fails and refunds the video at once; nothing is leased again.
func TestFailPermanently(t *testing.T) {
	e := newEnv(t)
	cred := e.register("gpu-1").Credential
	vid := e.createVideo()
	l, _ := e.lease(cred, 5)
	want(t, e.call("POST", taskPath(l.TaskID, "fail"), cred,
		wire.FailRequest{Token: l.Token, Reason: "input image https://x.example/a.png answered HTTP 404", Permanent: true}), http.StatusNoContent, "")
	v, _ := e.fsm.Video("", vid)
	if v.Status != fsm.StatusFailed || !v.CreditsRefunded || !strings.Contains(v.ErrorMessage, "not retried") {
		t.Fatalf("video after a permanent failure: %s refunded=%v %q", v.Status, v.CreditsRefunded, v.ErrorMessage)
	}
	if _, r := e.lease(cred, 0); r.status != http.StatusNoContent {
		t.Fatalf("a task was leased after its video failed: %s", r)
	}
}

// A fail reason reaches the customer's error.message and operators'
// terminals: its escape sequences are dropped and its other control
// characters replaced before it is stored, and the failure itself is kept.
func TestFailReasonIsStoredClean(t *testing.T) {
	e := newEnv(t)
	cred := e.register("gpu-1").Credential
	vid := e.createVideo()
	l, _ := e.lease(cred, 5)
	want(t, e.call("POST", taskPath(l.TaskID, "fail"), cred, wire.FailRequest{Token: l.Token, Permanent: true,
		Reason: "\u001b[31mEVIL\u001b[0m <b>x</b>\u001b]0;PWNED\u0007\r\nnext\u0008line"}), http.StatusNoContent, "")
	v, _ := e.fsm.Video("", vid)
	if v.Status != fsm.StatusFailed {
		t.Fatalf("video after a permanent failure: %s", v.Status)
	}
	if !strings.HasSuffix(v.ErrorMessage, ": EVIL <b>x</b>\nnext\uFFFDline") {
		t.Errorf("error message %q, want the reason without its escape sequences", v.ErrorMessage)
	}
	if i := strings.IndexFunc(v.ErrorMessage, func(r rune) bool { return r != '\n' && (r < 0x20 || r >= 0x7f && r <= 0x9f) }); i >= 0 {
		t.Errorf("error message %q holds a control character at byte %d", v.ErrorMessage, i)
	}
}

// olderMembers is a cluster with a member of an older release: it refuses
// to propose a command type above level, as raftnode's gate does.
type olderMembers struct {
	agentapi.Store
	level fsm.MessageType
}

func (o olderMembers) Apply(ctx context.Context, c fsm.Command) (any, error) {
	if c.Type() > o.level {
		return nil, &raftnode.NotUnderstoodError{Type: c.Type()}
	}
	return o.Store.Apply(ctx, c)
}

// Mid-upgrade a permanent failure is sent as a plain one: retried, as it
// was before the permanent kind existed.
func TestFailPermanentlyMidUpgrade(t *testing.T) {
	e := newEnv(t, func(c *agentapi.Config) {
		c.Store = olderMembers{Store: c.Store, level: fsm.FailTaskPermanentlyType - 1}
	})
	cred := e.register("gpu-1").Credential
	vid := e.createVideo()
	l, _ := e.lease(cred, 5)
	want(t, e.call("POST", taskPath(l.TaskID, "fail"), cred, wire.FailRequest{Token: l.Token, Reason: "HTTP 404", Permanent: true}), http.StatusNoContent, "")
	if v, _ := e.fsm.Video("", vid); v.Status == fsm.StatusFailed {
		t.Fatalf("a member that does not know permanent failures would not fail the video: %q", v.ErrorMessage)
	}
	if again, r := e.lease(cred, 5); r.status != http.StatusOK || again.TaskID != l.TaskID {
		t.Fatalf("the task was not retried: %s", r)
	}
}

func TestBlobRules(t *testing.T) {
	e := newEnv(t, func(c *agentapi.Config) { c.MaxBlobBytes = 1024 })
	holder := e.register("gpu-a").Credential
	other := e.register("gpu-b").Credential
	e.createVideo()
	a, r := e.lease(holder, 5)
	want(t, r, http.StatusOK, "")
	key := artifactKey(a, "clip.mp4")

	want(t, e.upload(other, key, "not mine"), http.StatusConflict, wire.CodeStaleLease)
	want(t, e.upload(holder, "videos/"+a.Video.ID+"/nope/clip.mp4", "x"), http.StatusNotFound, apierr.CodeNotFound)
	want(t, e.upload(holder, "videos/vid_unknown/render/clip.mp4", "x"), http.StatusNotFound, apierr.CodeNotFound)
	want(t, e.upload(holder, "other/"+a.Video.ID+"/render/clip.mp4", "x"), http.StatusBadRequest, apierr.CodeInvalidRequest)
	want(t, e.upload(holder, "videos/"+a.Video.ID+"/render/sub/clip.mp4", "x"), http.StatusBadRequest, apierr.CodeInvalidRequest)
	want(t, e.upload(holder, "videos/"+a.Video.ID+"/render/.hidden", "x"), http.StatusBadRequest, apierr.CodeInvalidRequest)
	want(t, e.upload(holder, "videos/"+a.Video.ID+"/render/a%20b.mp4", "x"), http.StatusBadRequest, apierr.CodeInvalidRequest)
	want(t, e.upload(holder, key, strings.Repeat("x", 1025)), http.StatusRequestEntityTooLarge, apierr.CodePayloadTooLarge)
	if _, err := e.blobs.Stat(context.Background(), key); err == nil {
		t.Fatal("a refused upload was stored")
	}
	want(t, e.upload(holder, key, strings.Repeat("x", 1024)), http.StatusCreated, "")
	// The holder itself, under an older lease's token, is stale too.
	want(t, e.call("PUT", "/agent/v1/blobs/"+key+"?lease_token="+e.currentToken(key)+"0", holder, []byte("old run")), http.StatusConflict, wire.CodeStaleLease)
	want(t, e.call("GET", "/agent/v1/blobs/videos/"+a.Video.ID+"/render/missing.mp4", holder, nil), http.StatusNotFound, apierr.CodeNotFound)
	want(t, e.call("GET", "/agent/v1/blobs/"+key, "", nil), http.StatusUnauthorized, apierr.CodeUnauthorized)

	// The lease holder reads, with ranges; another node reads nothing of a
	// task it holds no lease on (TestBlobReadsNeedALease).
	want(t, e.call("GET", "/agent/v1/blobs/"+key, other, nil), http.StatusNotFound, apierr.CodeNotFound)
	req, _ := http.NewRequest("GET", e.srv.URL+"/agent/v1/blobs/"+key, nil)
	req.Header.Set("Authorization", "Bearer "+holder)
	req.Header.Set("Range", "bytes=0-9")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusPartialContent || res.ContentLength != 10 {
		t.Fatalf("range GET: %d, length %d", res.StatusCode, res.ContentLength)
	}
}

func TestUnknownRoutesUseTheEnvelope(t *testing.T) {
	e := newEnv(t)
	want(t, e.call("GET", "/agent/v1/nope", "", nil), http.StatusNotFound, apierr.CodeNotFound)
	r := e.call("GET", "/agent/v1/register", "", nil)
	want(t, r, http.StatusMethodNotAllowed, apierr.CodeInvalidRequest)
	if r.header.Get("Allow") != "POST" {
		t.Errorf("405 with Allow %q, want POST", r.header.Get("Allow"))
	}
	cred := e.register("gpu-1").Credential
	want(t, e.call("POST", "/agent/v1/tasks/vid_x%2Frender/explode", cred, nil), http.StatusNotFound, apierr.CodeNotFound)
}

func TestNotifier(t *testing.T) {
	var n agentapi.Notifier
	c1 := n.Changed()
	c2 := n.Changed()
	select {
	case <-c1:
		t.Fatal("closed before Notify")
	default:
	}
	n.Notify()
	<-c1
	<-c2
	c3 := n.Changed()
	select {
	case <-c3:
		t.Fatal("a channel taken after Notify is already closed")
	default:
	}
	n.Notify()
	n.Notify() // no waiters: nothing to do, never blocks
	<-c3
}

// A node changes what it advertises without registering again: its
// running task keeps its lease, and the change is what placement sees.
func TestSetModelsKeepsTheNode(t *testing.T) {
	e := newEnv(t)
	reg := e.register("gpu-1")
	vid := e.createVideo()
	render, r := e.lease(reg.Credential, 5)
	want(t, r, http.StatusOK, "")
	want(t, e.call("PUT", "/agent/v1/models", "", wire.ModelsUpdate{}), http.StatusUnauthorized, apierr.CodeUnauthorized)
	want(t, e.call("PUT", "/agent/v1/models", reg.Credential, []byte(`{"models": "veo-3"}`)), http.StatusBadRequest, apierr.CodeInvalidRequest)
	long := make([]string, 10000)
	for i := range long {
		long[i] = "m"
	}
	want(t, e.call("PUT", "/agent/v1/models", reg.Credential, wire.ModelsUpdate{Models: long}), http.StatusBadRequest, apierr.CodeInvalidRequest)

	want(t, e.call("PUT", "/agent/v1/models", reg.Credential, wire.ModelsUpdate{Models: []string{"veo-3"}, WarmModels: []string{"veo-3"}}),
		http.StatusNoContent, "")
	nodes := e.fsm.Nodes()
	if len(nodes) != 1 || nodes[0].Info.ID != reg.NodeID || len(nodes[0].Info.Models) != 1 || nodes[0].Info.Models[0] != "veo-3" ||
		nodes[0].Info.Leases != 1 {
		t.Fatalf("nodes after the update: %+v", nodes)
	}
	r = e.call("POST", "/agent/v1/heartbeat", reg.Credential, wire.HeartbeatRequest{Leases: []wire.LeaseReport{{TaskID: render.TaskID, Token: render.Token}}})
	var hb wire.HeartbeatResponse
	if err := json.Unmarshal(r.body, &hb); r.status != http.StatusOK || err != nil || len(hb.Stale) != 0 {
		t.Fatalf("heartbeat after the update: %s (stale %v)", r, hb.Stale)
	}
	if v, _ := e.fsm.Video("", vid); v.Status != fsm.StatusProcessing {
		t.Fatalf("the video is %s after its node changed its models", v.Status)
	}
}

// A node changes its tools and voices without registering again: the voice
// catalogue follows, the running task keeps its lease, and a bad update is
// refused with the field to fix.
func TestSetCapacityKeepsTheNode(t *testing.T) {
	e := newEnv(t)
	reg := e.register("gpu-1")
	e.createVideo()
	_, r := e.lease(reg.Credential, 5)
	want(t, r, http.StatusOK, "")
	bella := wire.Voice{ID: "af_bella", Name: "Bella", Language: "en-us", Gender: "female"}
	want(t, e.call("PUT", "/agent/v1/capacity", "", wire.CapacityUpdate{}), http.StatusUnauthorized, apierr.CodeUnauthorized)
	want(t, e.call("PUT", "/agent/v1/capacity", reg.Credential, []byte(`{"tools": "ffmpeg"}`)), http.StatusBadRequest, apierr.CodeInvalidRequest)
	long := make([]string, 10000)
	for i := range long {
		long[i] = "t"
	}
	r = e.call("PUT", "/agent/v1/capacity", reg.Credential, wire.CapacityUpdate{Tools: long})
	want(t, r, http.StatusBadRequest, apierr.CodeInvalidRequest)
	if !bytes.Contains(r.body, []byte(`"tools"`)) {
		t.Errorf("a refused tools list does not name its field: %s", r.body)
	}
	r = e.call("PUT", "/agent/v1/capacity", reg.Credential, wire.CapacityUpdate{Voices: []wire.Voice{{ID: "bad id!"}}})
	want(t, r, http.StatusBadRequest, apierr.CodeInvalidRequest)
	if !bytes.Contains(r.body, []byte(`"voices"`)) {
		t.Errorf("a refused voice does not name its field: %s", r.body)
	}

	want(t, e.call("PUT", "/agent/v1/capacity", reg.Credential, wire.CapacityUpdate{Models: []string{"veo-3"},
		Tools: []string{"ffmpeg", wire.ToolPlanner}, Voices: []wire.Voice{bella}}), http.StatusNoContent, "")
	nodes := e.fsm.Nodes()
	if len(nodes) != 1 || nodes[0].Info.ID != reg.NodeID || !slices.Equal(nodes[0].Info.Models, []string{"veo-3"}) ||
		!slices.Contains(nodes[0].Info.Tools, wire.ToolPlanner) || nodes[0].Info.Leases != 1 {
		t.Fatalf("nodes after the update: %+v", nodes)
	}
	if v, ok := e.fsm.Voice("af_bella"); !ok || v.Gender != "female" {
		t.Fatalf("the node's new voice is not in the catalogue: %+v %v", v, ok)
	}
	want(t, e.call("PUT", "/agent/v1/capacity", reg.Credential, wire.CapacityUpdate{Tools: []string{"ffmpeg"}}), http.StatusNoContent, "")
	if _, ok := e.fsm.Voice("af_bella"); ok {
		t.Fatal("the voice the node withdrew is still in the catalogue")
	}
}

// An agent that lost its credential on the machine that holds a live
// node's GPUs takes the node's name back once the node has been silent for
// three heartbeats, not the node timeout; a second agent there while the
// node still heartbeats, another machine, and virtual GPUs are refused.
func TestRegisterFromTheSameMachine(t *testing.T) {
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	e := newEnv(t, func(c *agentapi.Config) {
		c.HeartbeatInterval = 5 * time.Second
		c.Now = func() time.Time { return time.Unix(0, clock.Load()) }
	})
	gpus := func(ids ...string) wire.Capacity {
		c := capacity("gpu-1")
		c.GPUs = nil
		for _, id := range ids {
			c.GPUs = append(c.GPUs, scheduler.GPU{ID: id, MemoryTotalGB: 80, MemoryFreeGB: 80})
		}
		return c
	}
	var first wire.RegisterResponse
	r := e.registerAs("gpu-1", gpus("GPU-a1", "GPU-a2"), "")
	want(t, r, http.StatusCreated, "")
	if err := json.Unmarshal(r.body, &first); err != nil {
		t.Fatal(err)
	}
	refused := func(what string, c wire.Capacity, same bool) {
		t.Helper()
		r := e.registerAs("gpu-1", c, "")
		want(t, r, http.StatusConflict, apierr.CodeNodeNameInUse)
		var env struct {
			Error struct {
				Message string         `json:"message"`
				Details map[string]any `json:"details"`
			} `json:"error"`
		}
		if err := json.Unmarshal(r.body, &env); err != nil || env.Error.Details["same_machine"] != same ||
			env.Error.Details["node_id"] != first.NodeID || (same && !strings.Contains(env.Error.Message, "another agent runs under this name here")) {
			t.Fatalf("%s: refusal %s", what, r.body)
		}
	}
	refused("the same GPUs while the node heartbeats", gpus("GPU-a2"), true)
	refused("another machine's GPUs", gpus("GPU-b1"), false)

	clock.Add(int64(14 * time.Second)) // under three heartbeats of silence
	refused("the same GPUs, silent 14 s", gpus("GPU-a1"), true)
	clock.Add(int64(2 * time.Second))
	refused("another machine's GPUs, silent 16 s", gpus("GPU-b1"), false)

	var again wire.RegisterResponse
	r = e.registerAs("gpu-1", gpus("GPU-a1", "GPU-a2"), "")
	want(t, r, http.StatusCreated, "")
	if err := json.Unmarshal(r.body, &again); err != nil {
		t.Fatal(err)
	}
	want(t, e.call("POST", "/agent/v1/heartbeat", first.Credential, wire.HeartbeatRequest{}), http.StatusUnauthorized, apierr.CodeUnauthorized)
	want(t, e.call("POST", "/agent/v1/heartbeat", again.Credential, wire.HeartbeatRequest{}), http.StatusOK, "")
	if n := len(e.fsm.Nodes()); n != 1 {
		t.Fatalf("%d nodes, want the one that replaced the first", n)
	}

	// Virtual GPUs are the same ids on every machine: they prove nothing.
	v := capacity("cpu-1")
	v.GPUs, v.Virtual = []scheduler.GPU{{ID: "virtual-0", MemoryTotalGB: 24, MemoryFreeGB: 24}}, true
	want(t, e.registerAs("cpu-1", v, ""), http.StatusCreated, "")
	clock.Add(int64(time.Minute))
	want(t, e.registerAs("cpu-1", v, ""), http.StatusConflict, apierr.CodeNodeNameInUse)
}

// Agents on several machines registering the same name at once: one node
// takes the name, and every other registration is refused, where all could
// pass the name check before and each later apply replaced the node before.
func TestRegisterTheSameNameAtOnce(t *testing.T) {
	e := newEnv(t)
	const n = 8
	statuses := make(chan int, n)
	var wg sync.WaitGroup
	for i := range n {
		c := capacity("gpu-race")
		for j := range c.GPUs {
			c.GPUs[j].ID = fmt.Sprintf("GPU-machine-%d-%d", i, j) // another machine each
		}
		wg.Go(func() { statuses <- e.registerAs("gpu-race", c, "").status })
	}
	wg.Wait()
	close(statuses)
	got := map[int]int{}
	for s := range statuses {
		got[s]++
	}
	if got[http.StatusCreated] != 1 || got[http.StatusConflict] != n-1 {
		t.Fatalf("statuses %v, want one 201 and %d 409", got, n-1)
	}
	if nodes := e.fsm.Nodes(); len(nodes) != 1 {
		t.Fatalf("%d nodes, want 1", len(nodes))
	}
}
