package scheduler

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestFencingRefusesStaleHolder(t *testing.T) {
	s := newState(t, Config{NodeTimeout: time.Hour})
	must(t, s.UpsertNode(gpuNode("n1", 1, 24, "m"), at(0)))
	must(t, s.UpsertNode(gpuNode("n2", 1, 24, "m"), at(0)))
	submitManual(t, s, "v", "a", 0, gpuReq("m", 1, 8), at(0))

	old := mustPlace(t, s, "n1", at(0))
	res := s.Expire(at(30)) // n1 presumed dead
	if len(res.Expired) != 1 || !res.Expired[0].Requeued {
		t.Fatalf("expire: %+v", res)
	}
	cur := mustPlace(t, s, "n2", at(31))
	if cur.TaskID != old.TaskID || cur.Token <= old.Token {
		t.Fatalf("successor lease %+v after %+v", cur, old)
	}

	// n1 comes back and reports on its old lease: every report is refused.
	if err := s.Progress(old.Ref(), 50); !isStale(err) {
		t.Errorf("progress: %v", err)
	}
	if _, err := s.Renew(old.Ref(), at(32), leaseDur); !isStale(err) {
		t.Errorf("renew: %v", err)
	}
	if _, err := s.Complete(old.Ref(), at(32)); !isStale(err) {
		t.Errorf("complete: %v", err)
	}
	if _, err := s.Fail(old.Ref(), "x", at(32)); !isStale(err) {
		t.Errorf("fail: %v", err)
	}
	// Right token, wrong node; right node, wrong token.
	forged := cur.Ref()
	forged.NodeID = "n1"
	if err := s.Progress(forged, 1); !isStale(err) {
		t.Errorf("forged node: %v", err)
	}
	forged = cur.Ref()
	forged.Token++
	if err := s.Progress(forged, 1); !isStale(err) {
		t.Errorf("forged token: %v", err)
	}
	hb, err := s.Heartbeat("n1", []LeaseRef{old.Ref()}, at(33), leaseDur)
	must(t, err)
	if len(hb.Stale) != 1 || len(hb.Renewed) != 0 {
		t.Fatalf("heartbeat %+v", hb)
	}
	// The successor's work is intact.
	must(t, s.Progress(cur.Ref(), 40))
	out, err := s.Complete(cur.Ref(), at(34))
	must(t, err)
	if out.Duplicate {
		t.Fatal("first completion reported as duplicate")
	}
	out, err = s.Complete(cur.Ref(), at(35))
	must(t, err)
	if !out.Duplicate {
		t.Fatal("retried completion not reported as duplicate")
	}
	if _, err := s.Complete(LeaseRef{TaskID: "v/nope"}, at(35)); !errors.Is(err, ErrUnknownTask) {
		t.Fatalf("unknown task: %v", err)
	}
}

func TestHeartbeatRenews(t *testing.T) {
	s := newState(t, Config{})
	must(t, s.UpsertNode(gpuNode("n", 1, 24, "m"), at(0)))
	submitManual(t, s, "v", "a", 0, gpuReq("m", 1, 8), at(0))
	l := mustPlace(t, s, "n", at(0))
	for sec := 20; sec <= 200; sec += 20 {
		hb, err := s.Heartbeat("n", []LeaseRef{l.Ref()}, at(sec), leaseDur)
		must(t, err)
		if len(hb.Renewed) != 1 || !hb.Renewed[0].Deadline.Equal(at(sec+30)) {
			t.Fatalf("heartbeat at %d: %+v", sec, hb)
		}
		if res := s.Expire(at(sec + 1)); len(res.Expired) != 0 {
			t.Fatalf("lease expired despite heartbeats: %+v", res)
		}
	}
	if res := s.Expire(at(230)); len(res.Expired) != 1 {
		t.Fatalf("lease did not expire at its deadline: %+v", res)
	}
	tk, _ := s.Task(l.TaskID)
	if tk.State != TaskReady || tk.Failures != 1 || tk.FailedNodes[0] != "n" {
		t.Fatalf("after expiry %+v", tk)
	}
}

func TestFailOnThreeNodesFailsVideo(t *testing.T) {
	s := newState(t, Config{})
	for _, id := range []string{"n1", "n2", "n3", "n4"} {
		must(t, s.UpsertNode(gpuNode(id, 2, 48, "wan"), at(0)))
	}
	must(t, s.Submit(AutoGraph(VideoInfo{ID: "v", AccountID: "a"}), at(0)))
	plan := mustPlace(t, s, "n4", at(0))
	_, err := s.Complete(plan.Ref(), at(1))
	must(t, err)
	must(t, s.AddScenes("v", 2, gpuReq("wan", 1, 40), at(1)))

	var outs []Outcome
	for i, id := range []string{"n1", "n2", "n3"} {
		var scene Lease
		for { // take tts and scene-0002 out of the way on n4
			l := mustPlace(t, s, id, at(2+i))
			if l.TaskID == "v/scene-0001" {
				scene = l
				break
			}
			_, err := s.Heartbeat(id, []LeaseRef{l.Ref()}, at(2+i), time.Hour)
			must(t, err)
		}
		if i < 2 {
			out, err := s.Fail(scene.Ref(), "oom", at(3+i))
			must(t, err)
			outs = append(outs, out)
		} else { // the third failure is an expiry
			res := s.Expire(scene.Deadline)
			outs = append(outs, res.Expired...)
		}
	}
	last := outs[len(outs)-1]
	if outs[0].VideoFailed || outs[1].VideoFailed || !last.VideoFailed || last.Failure == "" {
		t.Fatalf("outcomes %+v", outs)
	}
	if len(last.Revoked) == 0 {
		t.Fatalf("other leases of the failed video were not revoked: %+v", last)
	}
	st, _ := s.VideoStatus("v")
	if st.State != VideoFailed || st.FailedTask != "v/scene-0001" {
		t.Fatalf("status %+v", st)
	}
	if len(s.Leases()) != 0 {
		t.Fatalf("leases left: %+v", s.Leases())
	}
	if _, err := s.Cancel("v", at(9)); !errors.Is(err, ErrWrongState) {
		t.Fatalf("cancel failed video: %v", err)
	}
	must(t, checkInvariants(s))
}

func TestCancelRevokesLeases(t *testing.T) {
	s := newState(t, Config{})
	must(t, s.UpsertNode(gpuNode("n", 1, 24, "m"), at(0)))
	submitManual(t, s, "v", "a", 0, gpuReq("m", 1, 8), at(0))
	l := mustPlace(t, s, "n", at(0))
	out, err := s.Cancel("v", at(1))
	must(t, err)
	if len(out.Revoked) != 1 || out.Revoked[0] != l.Ref() {
		t.Fatalf("cancel %+v", out)
	}
	if _, err := s.Complete(l.Ref(), at(2)); !isStale(err) {
		t.Fatalf("complete after cancel: %v", err)
	}
	n, _ := s.Node("n")
	if n.FreeCPUSlots != 8 || len(n.IdleGPUs) != 1 {
		t.Fatalf("node not freed: %+v", n)
	}
	must(t, checkInvariants(s))
}

func TestRemoveNodeRequeuesWithoutFailure(t *testing.T) {
	s := newState(t, Config{})
	must(t, s.UpsertNode(gpuNode("n", 1, 24, "m"), at(0)))
	submitManual(t, s, "v", "a", 0, gpuReq("m", 1, 8), at(0))
	l := mustPlace(t, s, "n", at(0))
	revoked, err := s.RemoveNode("n", at(1))
	must(t, err)
	if len(revoked) != 1 || revoked[0].Token != l.Token {
		t.Fatalf("revoked %+v", revoked)
	}
	tk, _ := s.Task(l.TaskID)
	if tk.State != TaskReady || tk.Failures != 0 {
		t.Fatalf("task %+v", tk)
	}
	st, _ := s.VideoStatus("v")
	if st.Reason != ReasonNoNodeFits {
		t.Fatalf("reason %q", st.Reason)
	}
	must(t, checkInvariants(s))
}

func TestExpireMarksSilentNodesDown(t *testing.T) {
	s := newState(t, Config{NodeTimeout: time.Minute})
	must(t, s.UpsertNode(gpuNode("n", 1, 24, "m"), at(0)))
	submitManual(t, s, "v", "a", 0, gpuReq("m", 1, 8), at(0))
	res := s.Expire(at(61))
	if len(res.NodesDown) != 1 {
		t.Fatalf("expire %+v", res)
	}
	st, _ := s.VideoStatus("v")
	if st.Reason != ReasonNoNodeFits {
		t.Fatalf("reason with the only node down: %q", st.Reason)
	}
	_, err := s.Heartbeat("n", nil, at(62), leaseDur)
	must(t, err)
	st, _ = s.VideoStatus("v")
	if st.Reason != ReasonNodesBusy {
		t.Fatalf("reason after the node came back: %q", st.Reason)
	}
	must(t, checkInvariants(s))
}

// Two leases of one video expire in one Expire call: the first task is
// requeued, the second fails the video, which then cancels the first.
func TestExpireTwoLeasesOfOneVideo(t *testing.T) {
	s := newState(t, Config{MaxNodeFailures: 2})
	for _, id := range []string{"n1", "n2", "n3"} {
		must(t, s.UpsertNode(gpuNode(id, 1, 48, "wan"), at(0)))
	}
	must(t, s.Submit(AutoGraph(VideoInfo{ID: "v", AccountID: "a"}), at(0)))
	plan := mustPlace(t, s, "n1", at(0))
	_, err := s.Complete(plan.Ref(), at(0))
	must(t, err)
	must(t, s.AddScenes("v", 1, gpuReq("wan", 1, 40), at(0)))
	tts := mustPlace(t, s, "n1", at(0)) // tts (CPU) then the scene on n1's GPU
	scene := mustPlace(t, s, "n1", at(0))
	if tts.TaskID != "v/tts" || scene.TaskID != "v/scene-0001" {
		t.Fatalf("leases %s %s", tts.TaskID, scene.TaskID)
	}
	_, err = s.Fail(scene.Ref(), "oom", at(1)) // first failure of the scene
	must(t, err)
	scene = mustPlace(t, s, "n2", at(1))
	_, err = s.Renew(tts.Ref(), at(1), leaseDur) // both now expire at 31s, tts first (older token)
	must(t, err)

	res := s.Expire(at(31))
	if len(res.Expired) != 2 || !res.Expired[0].Requeued || !res.Expired[1].VideoFailed {
		t.Fatalf("expire %+v", res)
	}
	tk, _ := s.Task("v/tts")
	if tk.State != TaskCanceled {
		t.Fatalf("tts is %s after its video failed", tk.State)
	}
	must(t, checkInvariants(s))
}

// A task failed permanently fails its video at once, with capable nodes
// and attempts left, and releases the video's other work; a plain failure
// of the same task is retried.
func TestFailPermanently(t *testing.T) {
	s := newState(t, Config{})
	for _, id := range []string{"n1", "n2"} {
		must(t, s.UpsertNode(gpuNode(id, 1, 48, "wan"), at(0)))
	}
	submitManual(t, s, "retried", "a", 0, gpuReq("wan", 1, 8), at(0))
	submitManual(t, s, "bad-input", "b", 0, gpuReq("wan", 1, 8), at(0))
	first := mustPlace(t, s, "n1", at(1))
	second := mustPlace(t, s, "n2", at(1))
	byVideo := map[string]Lease{first.VideoID: first, second.VideoID: second}

	out, err := s.Fail(byVideo["retried"].Ref(), "oom", at(2))
	must(t, err)
	if !out.Requeued || out.VideoFailed {
		t.Fatalf("a plain failure: %+v", out)
	}
	out, err = s.FailPermanently(byVideo["bad-input"].Ref(), "input image https://x.example/a.png answered HTTP 404", at(2))
	must(t, err)
	if out.Requeued || !out.VideoFailed || !strings.Contains(out.Failure, "not retried") || !strings.Contains(out.Failure, "HTTP 404") {
		t.Fatalf("a permanent failure: %+v", out)
	}
	if st, _ := s.VideoStatus("bad-input"); st.State != VideoFailed {
		t.Fatalf("bad-input: %+v", st)
	}
	if _, err := s.FailPermanently(byVideo["bad-input"].Ref(), "again", at(3)); err == nil {
		t.Fatal("a second report of the same lease was taken")
	}
	must(t, checkInvariants(s))
}
