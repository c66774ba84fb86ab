package fsm_test

import (
	"testing"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/scheduler"
)

func waitingIDs(q fsm.QueueView) []string {
	var ids []string
	for _, v := range q.Videos {
		ids = append(ids, v.ID)
	}
	return ids
}

func TestQueueListsWaitingVideosOldestFirst(t *testing.T) {
	w := newWorld(t, applier{"RaftLog", viaLog})
	w.account("acct", fsm.PlanPro, 100)
	w.account("other", fsm.PlanPro, 100)
	w.video("v1", "acct", 10)
	w.video("v2", "other", 10)
	w.video("v3", "acct", 10)

	q := w.f.Queue("", 10)
	if got := waitingIDs(q); len(got) != 3 || got[0] != "v1" || got[1] != "v2" || got[2] != "v3" || q.HasMore || q.Unfinished != 3 || q.ReadyTasks != 3 {
		t.Fatalf("queue with no node: %v %+v", got, q)
	}
	if v := q.Videos[0]; v.WaitReason != string(scheduler.ReasonNoNodeFits) || v.Task.Name != "plan" || v.Task.State != scheduler.TaskReady {
		t.Fatalf("waiting video %+v", v)
	}
	if q := w.f.Queue("", 2); len(q.Videos) != 2 || !q.HasMore {
		t.Fatalf("limit 2: %v has_more %v", waitingIDs(q), q.HasMore)
	}
	if got := waitingIDs(w.f.Queue("acct", 10)); len(got) != 2 || got[0] != "v1" || got[1] != "v3" {
		t.Fatalf("one account's queue: %v", got)
	}

	// v1 runs: it no longer waits. Its render fails on the only node and
	// waits out its backoff: it waits again, saying why.
	w.node("a", 4, true)
	l, _ := w.lease("a", t0+sec)
	if got := waitingIDs(w.f.Queue("", 10)); len(got) != 2 || got[0] != "v2" {
		t.Fatalf("queue with v1 running: %v", got)
	}
	must(w, &fsm.FailTask{NodeID: "a", TaskID: l.TaskID, Token: l.Token, Reason: "out of memory", BackoffMS: 60_000, Now: t0 + 2*sec})
	q = w.f.Queue("", 10)
	if v := q.Videos[0]; v.ID != "v1" || v.WaitReason != string(scheduler.ReasonRetrying) || v.Task.Retry == nil ||
		v.Task.Retry.LastFailure != "out of memory" || v.Task.Failures != 1 {
		t.Fatalf("retrying video %+v", v)
	}
}

func TestVideoGraph(t *testing.T) {
	w := newWorld(t, applier{"RaftLog", viaLog})
	w.account("acct", fsm.PlanPro, 100)
	w.node("a", 4, true)
	w.video("v1", "acct", 10)
	l, _ := w.lease("a", t0+sec)
	g, ok := w.f.VideoGraph("v1")
	if !ok || g.Status != fsm.StatusProcessing || len(g.Tasks) != 3 {
		t.Fatalf("graph %+v", g)
	}
	plan, tts, composite := g.Tasks[0], g.Tasks[1], g.Tasks[2]
	if plan.Name != "plan" || plan.State != scheduler.TaskLeased || plan.Lease == nil || plan.Lease.NodeID != "a" ||
		plan.Attempts != 1 || plan.Lease.Token != l.Token {
		t.Fatalf("plan %+v", plan)
	}
	if tts.Name != "tts" || tts.State != scheduler.TaskBlocked || len(tts.Deps) != 1 || tts.Deps[0] != "plan" {
		t.Fatalf("tts %+v", tts)
	}
	if composite.Name != "composite" || !composite.AwaitsScenes {
		t.Fatalf("composite %+v", composite)
	}
	if _, ok := w.f.VideoGraph("nope"); ok {
		t.Fatal("a graph for an unknown video")
	}
	w.complete(l, t0+2*sec)
	w.finish("a", "v1")
	if g, ok := w.f.VideoGraph("v1"); !ok || g.Status != fsm.StatusCompleted || len(g.Tasks) != 0 {
		t.Fatalf("finished video's graph %+v", g)
	}
}
