package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/server"
	"github.com/vidfarm/vidfarm/models"
	"github.com/vidfarm/vidfarm/scheduler"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

const testAgentToken = "test-agent-token"

func withAgent(lease time.Duration) option {
	return func(c *server.Config) {
		c.AgentToken = testAgentToken
		c.LeaseDuration = lease
		c.HeartbeatInterval = min(lease/2, 5*time.Second)
	}
}

// agentCall sends a JSON body (or raw bytes) to the agent listener.
func (h *harness) agentCall(method, path, token string, body any) response {
	h.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, _ := json.Marshal(b)
		rd = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, "http://"+h.srv.AgentAddr()+path, rd)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return response{Status: res.StatusCode, Header: res.Header, Body: b}
}

func (h *harness) registerNode(name string, voices ...wire.Voice) string {
	h.t.Helper()
	gpus := []scheduler.GPU{{ID: "GPU-0", MemoryTotalGB: 80, MemoryFreeGB: 80}, {ID: "GPU-1", MemoryTotalGB: 80, MemoryFreeGB: 80}}
	r := h.agentCall("POST", "/agent/v1/register", testAgentToken, wire.RegisterRequest{Name: name,
		Capacity: wire.Capacity{Hostname: name, GPUs: gpus, CPUSlots: 4, Tools: []string{"ffmpeg", "espeak-ng"}, Models: models.IDs(), Virtual: true,
			Voices: voices}})
	if r.Status != http.StatusCreated {
		h.t.Fatalf("register: %d %s", r.Status, r.Body)
	}
	var reg wire.RegisterResponse
	_ = json.Unmarshal(r.Body, &reg)
	return reg.Credential
}

// leaseTask leases the next task, polling again after an empty poll (204)
// for up to a minute, as an agent does: on a busy machine the work may
// become ready after one poll's wait.
func (h *harness) leaseTask(cred string, wait int) wire.Assignment {
	h.t.Helper()
	r := h.agentCall("POST", fmt.Sprintf("/agent/v1/lease?wait=%d", wait), cred, nil)
	for deadline := time.Now().Add(time.Minute); r.Status == http.StatusNoContent && time.Now().Before(deadline); {
		r = h.agentCall("POST", fmt.Sprintf("/agent/v1/lease?wait=%d", wait), cred, nil)
	}
	if r.Status != http.StatusOK {
		h.t.Fatalf("lease: %d %s", r.Status, r.Body)
	}
	var a wire.Assignment
	_ = json.Unmarshal(r.Body, &a)
	return a
}

// runTask uploads one blob per file and completes the task.
func (h *harness) runTask(cred string, a wire.Assignment, files ...string) {
	h.t.Helper()
	arts := map[string]string{}
	for _, f := range files {
		key := "videos/" + a.Video.ID + "/" + a.Name + "/" + f
		if r := h.agentCall("PUT", "/agent/v1/blobs/"+key+"?lease_token="+strconv.FormatUint(a.Token, 10), cred, []byte("bytes of "+key)); r.Status != http.StatusCreated {
			h.t.Fatalf("upload %s: %d %s", key, r.Status, r.Body)
		}
		arts[f] = key
	}
	r := h.agentCall("POST", "/agent/v1/tasks/"+url.PathEscape(a.TaskID)+"/complete", cred,
		wire.CompleteRequest{Token: a.Token, Artifacts: arts, DurationSeconds: float64(a.Video.DurationSeconds)})
	if r.Status != http.StatusNoContent {
		h.t.Fatalf("complete %s: %d %s", a.TaskID, r.Status, r.Body)
	}
}

// A video created through the public API is rendered by an agent on the agent
// listener and delivered through a signed file URL.
func TestAgentRendersVideoEndToEnd(t *testing.T) {
	h := start(t, withAgent(30*time.Second))
	_, key := h.account("pro", 1000)
	cred := h.registerNode("gpu-1")

	// A poll waiting when the video is created gets its first task.
	got := make(chan wire.Assignment, 1)
	go func() {
		r := h.agentCall("POST", "/agent/v1/lease?wait=30", cred, nil)
		var a wire.Assignment
		_ = json.Unmarshal(r.Body, &a)
		got <- a
	}()
	created := h.do("POST", "/v1/videos", key, manualReq("duration_seconds", 5))
	if created.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", created.Status, created.Body)
	}
	vid := created.json(t)["id"].(string)
	var render wire.Assignment
	select {
	case render = <-got:
	case <-time.After(20 * time.Second):
		t.Fatal("the waiting lease poll did not get the new video")
	}
	if render.Video.ID != vid || render.Kind != scheduler.KindRender {
		t.Fatalf("first task: %+v", render)
	}
	h.runTask(cred, render, "clip.mp4")
	fin := h.leaseTask(cred, 5)
	if fin.Kind != scheduler.KindFinalize || fin.Inputs["render/clip.mp4"] == "" {
		t.Fatalf("second task: %+v", fin)
	}
	h.runTask(cred, fin, wire.ArtifactVideo, wire.ArtifactPoster)

	v := h.do("GET", "/v1/videos/"+vid, key, nil).json(t)
	videoURL, _ := v["video_url"].(string)
	if v["status"] != "completed" || videoURL == "" {
		t.Fatalf("video after rendering: %v", v)
	}
	checkFile(t, videoURL, "video/mp4", "bytes of videos/"+vid+"/finalize/video.mp4")
}

// A node that stops heartbeating loses its lease to the leader's expiry job, and
// another node gets the task; the first node's late report is stale.
func TestExpiredLeaseGoesToAnotherNode(t *testing.T) {
	h := start(t, withAgent(2*time.Second))
	_, key := h.account("pro", 1000)
	silent := h.registerNode("gpu-silent")
	if r := h.do("POST", "/v1/videos", key, manualReq("duration_seconds", 5)); r.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	first := h.leaseTask(silent, 5)
	other := h.registerNode("gpu-other")
	// The expiry runs every second; the woken poll gets the task well before its wait ends.
	start := time.Now()
	second := h.leaseTask(other, 30)
	if second.TaskID != first.TaskID || second.Attempt != 2 {
		t.Fatalf("after expiry: first %+v, second %+v", first, second)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Fatalf("the requeued task took %v to reach the other node", d)
	}
	r := h.agentCall("POST", "/agent/v1/tasks/"+url.PathEscape(first.TaskID)+"/progress", silent, wire.ProgressRequest{Token: first.Token, Percent: 50})
	if r.Status != http.StatusConflict || r.errorCode(t) != wire.CodeStaleLease {
		t.Fatalf("late report: %d %s", r.Status, r.Body)
	}
}

// TestFailedTaskBacksOff: a task that failed on the only node able to run
// it waits out its backoff; meanwhile the video says why, and then the
// node gets it again.
func TestFailedTaskBacksOff(t *testing.T) {
	h := start(t, withAgent(30*time.Second), func(c *server.Config) { c.RetryBackoff = 300 * time.Millisecond })
	_, key := h.account("pro", 1000)
	cred := h.registerNode("gpu-1")
	vid := h.create(key, manualReq("duration_seconds", 5))["id"].(string)
	first := h.leaseTask(cred, 5)
	r := h.agentCall("POST", "/agent/v1/tasks/"+url.PathEscape(first.TaskID)+"/fail", cred, wire.FailRequest{Token: first.Token, Reason: "model server unreachable"})
	if r.Status != http.StatusNoContent {
		t.Fatalf("fail: %d %s", r.Status, r.Body)
	}
	v := h.do("GET", "/v1/videos/"+vid, key, nil).json(t)
	p, _ := v["progress"].(map[string]any)
	// Read after the status: a task still retrying now was retrying then.
	if task, _ := h.srv.Node.FSM.Task(first.TaskID); task.State == scheduler.TaskRetrying && p["reason"] != "retrying_after_failure" {
		t.Fatalf("the task is retrying, but progress says %v", p)
	}
	t.Logf("progress while retrying: %v", p)
	second := h.leaseTask(cred, 10)
	if second.TaskID != first.TaskID || second.Attempt != 2 {
		t.Fatalf("after the backoff: %+v", second)
	}
}

// A leader that starts (here, the one node restarted) gives the nodes one
// lease's length to heartbeat before it expires the leases that ran out
// while no member led: a node that goes on rendering keeps its task, where
// the first expiry after the restart took it away.
func TestNewLeaderLetsLeasesBeRenewed(t *testing.T) {
	const lease = 4 * time.Second
	h := start(t, withAgent(lease))
	_, key := h.account("pro", 1000)
	node := h.registerNode("gpu-renders-on")
	if r := h.do("POST", "/v1/videos", key, manualReq("duration_seconds", 5)); r.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	task := h.leaseTask(node, 5)
	leased := time.Now()
	beat := wire.HeartbeatRequest{Leases: []wire.LeaseReport{{TaskID: task.TaskID, Token: task.Token, Percent: 10}}}
	h.cfg.LeaseDuration = lease // the restart's, as given
	h.stop()
	// The lease runs out while the control plane is down.
	waitUntil(t, "the lease's deadline passes", 10*time.Second, func() bool { return time.Since(leased) > lease+time.Second })
	h.restart()
	back := time.Now()
	// The agent's next heartbeat comes up to an interval (2 s here) after
	// the control plane is back; the expiry job has run by then.
	waitUntil(t, "the agent's next heartbeat is due", 10*time.Second, func() bool { return time.Since(back) > 2*time.Second })
	// Heartbeats keep coming, as a live agent's do, past the grace: the
	// task stays this node's and its report is taken.
	waitUntil(t, "a lease's length after the restart", 20*time.Second, func() bool {
		if r := h.agentCall("POST", "/agent/v1/heartbeat", node, beat); r.Status != http.StatusOK {
			t.Fatalf("heartbeat: %d %s", r.Status, r.Body)
		}
		return time.Since(back) > 2*lease
	})
	r := h.agentCall("POST", "/agent/v1/tasks/"+url.PathEscape(task.TaskID)+"/progress", node, wire.ProgressRequest{Token: task.Token, Percent: 50})
	if r.Status != http.StatusOK && r.Status != http.StatusNoContent {
		t.Fatalf("progress of the renewed lease: %d %s", r.Status, r.Body)
	}
}
