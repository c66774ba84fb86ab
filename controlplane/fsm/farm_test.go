package fsm_test

import (
	"bytes"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/models"
	"github.com/vidfarm/vidfarm/scheduler"
)

// farmNode is a node that can take every task of the catalog.
func farmNode() scheduler.Node {
	gpus := make([]scheduler.GPU, 4)
	for i := range gpus {
		gpus[i] = scheduler.GPU{ID: string(rune('a' + i)), MemoryTotalGB: 80, MemoryFreeGB: 80}
	}
	return scheduler.Node{GPUs: gpus, CPUSlots: 4, Tools: []string{"ffmpeg", "espeak-ng"}, Models: models.IDs()}
}

type farm struct {
	t   *testing.T
	f   *fsm.FSM
	now int64
}

func (fm *farm) apply(c fsm.Command) any {
	fm.t.Helper()
	fm.now += int64(time.Second)
	v, err := fm.f.ApplyCommand(c)
	if err != nil {
		fm.t.Fatalf("%T: %v", c, err)
	}
	return v
}

func (fm *farm) lease(node string) scheduler.Lease {
	fm.t.Helper()
	res := fm.apply(&fsm.LeaseTask{NodeID: node, LeaseMS: 30000, Now: fm.now}).(fsm.LeaseResult)
	if !res.Found {
		fm.t.Fatalf("no task for %s: %s", node, res.Why)
	}
	return res.Lease
}

func (fm *farm) complete(l scheduler.Lease, scenes int, files ...string) scheduler.Outcome {
	fm.t.Helper()
	t, _ := fm.f.Task(l.TaskID)
	arts := map[string]string{}
	for _, f := range files {
		arts[f] = "videos/" + l.VideoID + "/" + t.Name + "/" + f
	}
	return fm.apply(&fsm.CompleteTask{NodeID: l.NodeID, TaskID: l.TaskID, Token: l.Token, Artifacts: arts, Scenes: scenes, DurationSeconds: 5.02, Now: fm.now}).(scheduler.Outcome)
}

func newFarm(t *testing.T, credits int64) (*farm, string) {
	fm := &farm{t: t, f: fsm.New(), now: int64(time.Hour)}
	fm.apply(&fsm.CreateAccount{AccountID: "acct_1", Name: "a", Plan: fsm.PlanPro, Credits: credits, KeyID: "key_1", Now: fm.now})
	fm.apply(&fsm.RegisterNode{NodeID: "node_1", Name: "n1", CredHash: [32]byte{1}, Node: farmNode(), Now: fm.now})
	return fm, "node_1"
}

func TestManualVideoThroughTheFarm(t *testing.T) {
	fm, node := newFarm(t, 100)
	fm.apply(&fsm.CreateVideo{VideoID: "vid_1", AccountID: "acct_1", Price: 40, Now: fm.now,
		Spec: fsm.Spec{Mode: fsm.ModeManual, Prompt: "fox", Model: "wan-2.2-a14b", Resolution: "720p", DurationSeconds: 5, Operation: "text_to_video"}})
	if v, _ := fm.f.Video("acct_1", "vid_1"); v.Status != fsm.StatusQueued || v.QueuePosition != 1 {
		t.Fatalf("before lease: status %s position %d", v.Status, v.QueuePosition)
	}
	render := fm.lease(node)
	if v, _ := fm.f.Video("acct_1", "vid_1"); v.Status != fsm.StatusProcessing {
		t.Fatalf("after lease: status %s", v.Status)
	}
	fm.apply(&fsm.TaskProgress{NodeID: node, TaskID: render.TaskID, Token: render.Token, Percent: 50, Now: fm.now})
	if v, _ := fm.f.Video("acct_1", "vid_1"); v.Percent <= 0 || v.Percent >= 100 {
		t.Fatalf("percent while rendering: %d", v.Percent)
	}
	fm.complete(render, 0, "clip.mp4")
	fin := fm.lease(node)
	out := fm.complete(fin, 0, "video.mp4", "poster.jpg")
	if !out.VideoCompleted {
		t.Fatalf("finalize did not complete the video: %+v", out)
	}
	v, _ := fm.f.Video("acct_1", "vid_1")
	if v.Status != fsm.StatusCompleted || v.Outputs.Video != "videos/vid_1/finalize/video.mp4" || v.Spec.DurationSeconds != 5 {
		t.Fatalf("completed video: %+v", v.Video)
	}
	if a, _ := fm.f.Account("acct_1"); a.Credits != 60 {
		t.Fatalf("charged once: balance %d, want 60", a.Credits)
	}
}

func TestStaleLeaseRefusedAndFailureRefunds(t *testing.T) {
	fm, node := newFarm(t, 100)
	fm.apply(&fsm.RegisterNode{NodeID: "node_2", Name: "n2", CredHash: [32]byte{2}, Node: farmNode(), Now: fm.now})
	fm.apply(&fsm.CreateVideo{VideoID: "vid_1", AccountID: "acct_1", Price: 40, Now: fm.now,
		Spec: fsm.Spec{Mode: fsm.ModeManual, Prompt: "fox", Model: "wan-2.2-a14b", Resolution: "720p", DurationSeconds: 5, Operation: "text_to_video"}})
	first := fm.lease(node)
	fm.now += int64(time.Minute)
	fm.apply(&fsm.ExpireLeases{Now: fm.now})
	second := fm.lease("node_2")
	if second.TaskID != first.TaskID || second.Token == first.Token {
		t.Fatalf("expired task not handed over: %+v then %+v", first, second)
	}
	_, err := fm.f.ApplyCommand(&fsm.CompleteTask{NodeID: node, TaskID: first.TaskID, Token: first.Token, Now: fm.now})
	if !errors.Is(err, scheduler.ErrStaleLease) {
		t.Fatalf("late completion from the old holder: %v, want ErrStaleLease", err)
	}
	// Fail it on node_2 and then on a third node: three distinct nodes fail the video.
	fm.apply(&fsm.FailTask{NodeID: "node_2", TaskID: second.TaskID, Token: second.Token, Reason: "boom", Now: fm.now})
	fm.apply(&fsm.RegisterNode{NodeID: "node_3", Name: "n3", CredHash: [32]byte{3}, Node: farmNode(), Now: fm.now})
	third := fm.lease("node_3")
	fm.apply(&fsm.FailTask{NodeID: "node_3", TaskID: third.TaskID, Token: third.Token, Reason: "boom", Now: fm.now})
	v, _ := fm.f.Video("acct_1", "vid_1")
	if v.Status != fsm.StatusFailed || !v.CreditsRefunded {
		t.Fatalf("video after failing on three nodes: %+v", v.Video)
	}
	if a, _ := fm.f.Account("acct_1"); a.Credits != 100 {
		t.Fatalf("refund: balance %d, want 100", a.Credits)
	}
}

func TestAutoVideoScenesAndSnapshot(t *testing.T) {
	fm, node := newFarm(t, 100)
	fm.apply(&fsm.CreateVideo{VideoID: "vid_a", AccountID: "acct_1", Price: 6, Now: fm.now,
		Spec: fsm.Spec{Mode: fsm.ModeAuto, Prompt: "tour", DurationSeconds: 10, Orientation: "landscape"}})
	plan := fm.lease(node)
	if out := fm.complete(plan, 2, "plan.json"); !out.NeedsScenes {
		t.Fatalf("plan outcome: %+v", out)
	}
	// Snapshot mid-render and restore: the restored FSM must carry on identically.
	snap := snapshotBytes(t, fm.f)
	back := restored(t, snap)
	if !bytes.Equal(snap, snapshotBytes(t, back)) {
		t.Fatal("restored state snapshots differently")
	}
	for _, f := range []*fsm.FSM{fm.f, back} {
		g := &farm{t: t, f: f, now: fm.now}
		seen := map[string]bool{}
		for i := 0; i < 3; i++ { // tts and two scenes, in whatever order placement picks
			l := g.lease(node)
			task, _ := f.Task(l.TaskID)
			seen[task.Name] = true
			g.complete(l, 0, "out.bin")
		}
		if !seen["tts"] || !seen["scene-0001"] || !seen["scene-0002"] {
			t.Fatalf("tasks after plan: %v", seen)
		}
		comp := g.lease(node)
		out := g.complete(comp, 0, "video.mp4", "video_no_captions.mp4", "captions.vtt", "captions.srt")
		v, _ := f.Video("acct_1", "vid_a")
		if !out.VideoCompleted || v.Status != fsm.StatusCompleted || v.Outputs.Captions == "" || v.Outputs.VideoNoCaptions == "" {
			t.Fatalf("auto video did not complete: %+v %+v", out, v.Video)
		}
		// Only the deliveries stay; the intermediates wait for the janitor.
		if len(v.Artifacts) != 4 {
			t.Fatalf("artifacts kept: %v", v.Artifacts)
		}
		garbage, n := f.Garbage(10)
		want := []string{"videos/vid_a/plan/plan.json", "videos/vid_a/scene-0001/out.bin", "videos/vid_a/scene-0002/out.bin", "videos/vid_a/tts/out.bin"}
		if n != 4 || !slices.Equal(garbage, want) {
			t.Fatalf("garbage %v (%d), want %v", garbage, n, want)
		}
	}
	if !bytes.Equal(snapshotBytes(t, fm.f), snapshotBytes(t, back)) {
		t.Fatal("the two FSMs differ after the same work")
	}
	// The leader deleted two of them (and one key that is not garbage).
	g := &farm{t: t, f: fm.f, now: fm.now}
	if n := g.apply(&fsm.BlobsDeleted{Keys: []string{"videos/vid_a/tts/out.bin", "videos/vid_a/plan/plan.json", "videos/other"}, Now: fm.now}); n != 2 {
		t.Fatalf("BlobsDeleted removed %v keys, want 2", n)
	}
	snap = snapshotBytes(t, fm.f)
	back = restored(t, snap)
	if left, n := back.Garbage(1); n != 2 || len(left) != 1 || left[0] != "videos/vid_a/scene-0001/out.bin" {
		t.Fatalf("garbage after restore: %v of %d", left, n)
	}
	if !bytes.Equal(snap, snapshotBytes(t, back)) {
		t.Fatal("restored state snapshots differently")
	}
}

// TestFailedVideoLeavesNoBlobs: a failed video delivers nothing, so every
// artifact of its finished tasks becomes garbage.
func TestFailedVideoLeavesNoBlobs(t *testing.T) {
	fm, node := newFarm(t, 100)
	fm.apply(&fsm.CreateVideo{VideoID: "vid_f", AccountID: "acct_1", Price: 6, Now: fm.now,
		Spec: fsm.Spec{Mode: fsm.ModeAuto, Prompt: "tour", DurationSeconds: 10, Orientation: "landscape"}})
	fm.complete(fm.lease(node), 2, "plan.json")
	fm.complete(fm.lease(node), 0, "out.bin")
	fm.apply(&fsm.FailVideo{VideoID: "vid_f", Reason: "operator", Now: fm.now})
	v, _ := fm.f.Video("acct_1", "vid_f")
	if v.Status != fsm.StatusFailed || len(v.Artifacts) != 0 {
		t.Fatalf("failed video: %s, artifacts %v", v.Status, v.Artifacts)
	}
	if garbage, n := fm.f.Garbage(10); n != 2 || len(garbage) != 2 {
		t.Fatalf("garbage %v (%d), want the plan's and the next task's", garbage, n)
	}
}

func TestArtifactKeysMustBeTheTasks(t *testing.T) {
	fm, node := newFarm(t, 100)
	fm.apply(&fsm.CreateVideo{VideoID: "vid_1", AccountID: "acct_1", Price: 40, Now: fm.now,
		Spec: fsm.Spec{Mode: fsm.ModeManual, Prompt: "fox", Model: "wan-2.2-a14b", Resolution: "720p", DurationSeconds: 5, Operation: "text_to_video"}})
	l := fm.lease(node)
	for _, key := range []string{"videos/vid_2/render/clip.mp4", "videos/vid_1/finalize/clip.mp4", "videos/vid_1/render/a/b.mp4", "other"} {
		_, err := fm.f.ApplyCommand(&fsm.CompleteTask{NodeID: node, TaskID: l.TaskID, Token: l.Token, Artifacts: map[string]string{"clip.mp4": key}, Now: fm.now})
		if !errors.Is(err, fsm.ErrInvalidCommand) {
			t.Errorf("artifact key %q: %v, want ErrInvalidCommand", key, err)
		}
	}
}

// TestFailTaskBacksOff: the leader's backoff travels in the command, so
// every replica holds the task until the same time; ExpireLeases releases
// it, and a snapshot taken meanwhile keeps it.
func TestFailTaskBacksOff(t *testing.T) {
	fm, node := newFarm(t, 100)
	fm.apply(&fsm.CreateVideo{VideoID: "vid_1", AccountID: "acct_1", Price: 40, Now: fm.now,
		Spec: fsm.Spec{Mode: fsm.ModeManual, Prompt: "fox", Model: "wan-2.2-a14b", Resolution: "720p", DurationSeconds: 5, Operation: "text_to_video"}})
	l := fm.lease(node)
	failedAt := fm.now + int64(time.Second) // apply advances the clock first
	fm.apply(&fsm.FailTask{NodeID: node, TaskID: l.TaskID, Token: l.Token, Reason: "model server down", BackoffMS: 5000, Now: failedAt})
	if task, _ := fm.f.Task(l.TaskID); task.State != scheduler.TaskRetrying || task.RetryAt == nil ||
		!task.RetryAt.Equal(time.Unix(0, failedAt).Add(5*time.Second)) {
		t.Fatalf("task after a failure with backoff: %+v", task)
	}
	if res := fm.apply(&fsm.LeaseTask{NodeID: node, LeaseMS: 30000, Now: failedAt + int64(time.Second)}).(fsm.LeaseResult); res.Found {
		t.Fatalf("leased during the backoff: %+v", res)
	}
	back := restored(t, snapshotBytes(t, fm.f))
	for _, f := range []*fsm.FSM{fm.f, back} {
		res := must1(t, f, &fsm.ExpireLeases{Now: failedAt + int64(5*time.Second)}).(scheduler.ExpireResult)
		if res.Retried != 1 {
			t.Fatalf("ExpireLeases at the retry time: %+v", res)
		}
		got := must1(t, f, &fsm.LeaseTask{NodeID: node, LeaseMS: 30000, Now: failedAt + int64(6*time.Second)}).(fsm.LeaseResult)
		if !got.Found || got.Lease.TaskID != l.TaskID || got.Lease.Attempt != 2 {
			t.Fatalf("lease after the backoff: %+v", got)
		}
	}
	if !bytes.Equal(snapshotBytes(t, fm.f), snapshotBytes(t, back)) {
		t.Fatal("the restored FSM went on differently")
	}
}

func must1(t *testing.T, f *fsm.FSM, c fsm.Command) any {
	t.Helper()
	v, err := f.ApplyCommand(c)
	if err != nil {
		t.Fatalf("%T: %v", c, err)
	}
	return v
}

// A finished task's service time is kept on its video with the kind of GPU
// it ran on: what the farm's history (a twin for bench sim) is made of. A
// duplicate completion records nothing more.
func TestTaskTimingsRecorded(t *testing.T) {
	fm, _ := newFarm(t, 100)
	n := farmNode()
	for i := range n.GPUs {
		n.GPUs[i].Model = "NVIDIA L40S"
	}
	fm.apply(&fsm.RegisterNode{NodeID: "node_l40s", Name: "l", CredHash: [32]byte{3}, Node: n, Now: fm.now})
	fm.apply(&fsm.DeregisterNode{NodeID: "node_1", Now: fm.now})
	fm.apply(&fsm.CreateVideo{VideoID: "vid_1", AccountID: "acct_1", Price: 40, Now: fm.now,
		Spec: fsm.Spec{Mode: fsm.ModeManual, Prompt: "fox", Model: "wan-2.2-a14b", Resolution: "720p", DurationSeconds: 5, Operation: "text_to_video"}})
	render := fm.lease("node_l40s")
	fm.apply(&fsm.TaskProgress{NodeID: render.NodeID, TaskID: render.TaskID, Token: render.Token, Percent: 50, Now: fm.now})
	fm.complete(render, 0, "clip.mp4") // two seconds after the lease
	fm.complete(render, 0, "clip.mp4") // a retried answer
	fin := fm.lease("node_l40s")
	fm.complete(fin, 0, "video.mp4", "poster.jpg")
	v, _ := fm.f.Video("acct_1", "vid_1")
	want := []fsm.TaskTiming{
		{Kind: "render", Model: "wan-2.2-a14b", GPU: "NVIDIA L40S", Millis: 2000},
		{Kind: "finalize", Millis: 1000},
	}
	if !slices.Equal(v.Timings, want) {
		t.Fatalf("timings = %+v, want %+v", v.Timings, want)
	}
	if got, _ := restored(t, snapshotBytes(t, fm.f)).Video("acct_1", "vid_1"); !slices.Equal(got.Timings, want) {
		t.Fatalf("timings after a restore = %+v, want %+v", got.Timings, want)
	}
}
