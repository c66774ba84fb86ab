package fsm_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/models"
	"github.com/vidfarm/vidfarm/scheduler"
)

// t0 is the leader's clock at the start of every test, in Unix nanoseconds.
const t0 int64 = 1_700_000_000 * 1e9

// applier applies one command to an FSM and unwraps its answer.
type applier struct {
	name  string
	apply func(t *testing.T, f *fsm.FSM, c fsm.Command) (any, error)
}

// viaCommand applies with ApplyCommand, outside Raft.
func viaCommand(t *testing.T, f *fsm.FSM, c fsm.Command) (any, error) {
	t.Helper()
	return f.ApplyCommand(c)
}

// viaLog applies the way Raft does: Encode, then Apply of a log entry.
func viaLog(t *testing.T, f *fsm.FSM, c fsm.Command) (any, error) {
	t.Helper()
	data, err := fsm.Encode(c)
	if err != nil {
		t.Fatalf("encode %s: %v", c.Type(), err)
	}
	out := f.Apply(&raft.Log{Index: f.AppliedIndex() + 1, Term: 1, Type: raft.LogCommand, Data: data})
	res, ok := out.(*fsm.Result)
	if !ok {
		t.Fatalf("Apply(%s) returned %T, want *fsm.Result", c.Type(), out)
	}
	return res.Value, res.Err
}

// viaLeader applies the way Raft does on the node that proposed the entry:
// Predecode, then Apply of a log entry holding the very same bytes.
func viaLeader(t *testing.T, f *fsm.FSM, c fsm.Command) (any, error) {
	t.Helper()
	data, err := fsm.Encode(c)
	if err != nil {
		t.Fatalf("encode %s: %v", c.Type(), err)
	}
	forget, err := f.Predecode(data)
	if err != nil {
		t.Fatalf("predecode %s: %v", c.Type(), err)
	}
	defer forget()
	out := f.Apply(&raft.Log{Index: f.AppliedIndex() + 1, Term: 1, Type: raft.LogCommand, Data: data})
	res, ok := out.(*fsm.Result)
	if !ok {
		t.Fatalf("Apply(%s) returned %T, want *fsm.Result", c.Type(), out)
	}
	return res.Value, res.Err
}

// appliers are the ways every rule is checked.
var appliers = []applier{{"ApplyCommand", viaCommand}, {"RaftLog", viaLog}, {"LeaderLog", viaLeader}}

// world is an FSM with a few accounts, applied through one applier.
type world struct {
	t *testing.T
	f *fsm.FSM
	a applier
}

func newWorld(t *testing.T, a applier) *world {
	t.Helper()
	return &world{t: t, f: fsm.New(), a: a}
}

func (w *world) apply(c fsm.Command) (any, error) {
	w.t.Helper()
	return w.a.apply(w.t, w.f, c)
}

// must applies c and fails the test on a refusal.
func (w *world) must(c fsm.Command) any {
	w.t.Helper()
	v, err := w.apply(c)
	if err != nil {
		w.t.Fatalf("%s: %v", c.Type(), err)
	}
	return v
}

// Apply makes the world an fsm.Applier, for fsm.Do.
func (w *world) Apply(_ context.Context, c fsm.Command) (any, error) {
	w.t.Helper()
	return w.apply(c)
}

// must applies c through fsm.Do and returns its answer; it fails the test on
// a refusal.
func must[R any](w *world, c fsm.Typed[R]) R {
	w.t.Helper()
	v, err := fsm.Do(context.Background(), w, c)
	if err != nil {
		w.t.Fatalf("%s: %v", c.Type(), err)
	}
	return v
}

func keyHash(secret string) [32]byte { return sha256.Sum256([]byte(secret)) }

// account opens an account with key "<id>-key0" (secret "secret-<id>").
func (w *world) account(id, plan string, credits int64) {
	w.t.Helper()
	w.must(&fsm.CreateAccount{AccountID: id, Name: "name of " + id, Plan: plan, Credits: credits,
		KeyID: id + "-key0", KeyHash: keyHash("secret-" + id), KeyHint: "vf_live_" + id[:1], Now: t0})
}

func (w *world) balance(id string) int64 {
	w.t.Helper()
	a, ok := w.f.Account(id)
	if !ok {
		w.t.Fatalf("account %s does not exist", id)
	}
	return a.Credits
}

// manualSpec is a text-to-video render of the model the farm nodes carry.
func manualSpec(prompt string) fsm.Spec {
	return fsm.Spec{Mode: fsm.ModeManual, Prompt: prompt, Model: "wan-2.2-a14b", Operation: "text_to_video",
		Resolution: "720p", AspectRatio: "16:9", DurationSeconds: 5}
}

func autoSpec(prompt string, seconds int) fsm.Spec {
	return fsm.Spec{Mode: fsm.ModeAuto, Prompt: prompt, DurationSeconds: seconds, Orientation: "landscape"}
}

// createVideo builds a CreateVideo; the body hash is derived from body.
func createVideo(id, account string, price int64, idemKey, body string, now int64) *fsm.CreateVideo {
	return &fsm.CreateVideo{VideoID: id, AccountID: account, Spec: autoSpec("prompt of "+id, 5), Price: price,
		IdempotencyKey: idemKey, BodyHash: sha256.Sum256([]byte(body)), Now: now}
}

// video creates a paid video and returns its result.
func (w *world) video(id, account string, price int64) fsm.CreateVideoResult {
	w.t.Helper()
	return must(w, createVideo(id, account, price, "", "", t0))
}

func (w *world) get(account, id string) fsm.QueuedVideo {
	w.t.Helper()
	v, ok := w.f.Video(account, id)
	if !ok {
		w.t.Fatalf("video %s of %s not found", id, account)
	}
	return v
}

// node registers a node; cpu is its CPU slots, and it has GPUs and every tool and
// model when gpus is true.
func (w *world) node(id string, cpu int, gpus bool) {
	w.t.Helper()
	spec := scheduler.Node{CPUSlots: cpu}
	if gpus {
		spec.Tools, spec.Models = []string{"ffmpeg", "espeak-ng"}, models.IDs()
		for _, g := range []string{"g0", "g1", "g2", "g3"} {
			spec.GPUs = append(spec.GPUs, scheduler.GPU{ID: g, MemoryTotalGB: 80, MemoryFreeGB: 80})
		}
	}
	w.must(&fsm.RegisterNode{NodeID: id, Name: "name-" + id, CredHash: keyHash("node-" + id), Node: spec, Now: t0})
}

// lease leases the next task to node; ok is false when there is none.
func (w *world) lease(node string, now int64) (scheduler.Lease, bool) {
	w.t.Helper()
	res := must(w, &fsm.LeaseTask{NodeID: node, LeaseMS: 60_000, Now: now})
	return res.Lease, res.Found
}

// complete completes a lease with the files its task is expected to make.
func (w *world) complete(l scheduler.Lease, now int64) scheduler.Outcome {
	w.t.Helper()
	task, ok := w.f.Task(l.TaskID)
	if !ok {
		w.t.Fatalf("task %s unknown", l.TaskID)
	}
	arts := map[string]string{}
	for _, f := range []string{"video.mp4", "video_no_captions.mp4", "captions.vtt", "captions.srt", "poster.jpg"} {
		arts[f] = "videos/" + l.VideoID + "/" + task.Name + "/" + f
	}
	return must(w, &fsm.CompleteTask{NodeID: l.NodeID, TaskID: l.TaskID, Token: l.Token, Artifacts: arts, Scenes: 1,
		DurationSeconds: 6, Now: now})
}

// finish runs every task the node is given until the video completes.
func (w *world) finish(node, videoID string) {
	w.t.Helper()
	for range 20 {
		l, ok := w.lease(node, t0+1)
		if !ok {
			w.t.Fatalf("no task for %s while %s is unfinished", node, videoID)
		}
		if out := w.complete(l, t0+2); out.VideoCompleted && l.VideoID == videoID {
			return
		}
	}
	w.t.Fatalf("video %s did not complete", videoID)
}

// wantErr checks err against a sentinel (nil: no error wanted).
func wantErr(t *testing.T, err, want error) {
	t.Helper()
	switch {
	case want == nil && err != nil:
		t.Fatalf("unexpected refusal: %v", err)
	case want != nil && !errors.Is(err, want):
		t.Fatalf("got error %v, want %v", err, want)
	}
}

// memSink is an in-memory raft.SnapshotSink.
type memSink struct {
	bytes.Buffer
	closed, cancelled bool
}

func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Cancel() error { s.cancelled = true; return nil }
func (s *memSink) Close() error  { s.closed = true; return nil }

// snapshotBytes persists a snapshot of f and returns its bytes.
func snapshotBytes(t *testing.T, f *fsm.FSM) []byte {
	t.Helper()
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	defer snap.Release()
	var sink memSink
	if err := snap.Persist(&sink); err != nil {
		t.Fatalf("persist: %v", err)
	}
	if !sink.closed || sink.cancelled {
		t.Fatalf("persist left the sink closed=%v cancelled=%v", sink.closed, sink.cancelled)
	}
	// With a state file the snapshot is a checkpoint marker; the snapshot
	// itself streams from the file.
	if index, ok := fsm.CheckpointMarker(sink.Bytes()); ok {
		var full bytes.Buffer
		if err := f.WriteCheckpoint(&full, index); err != nil {
			t.Fatalf("write checkpoint %d: %v", index, err)
		}
		return full.Bytes()
	}
	return sink.Bytes()
}

// restored returns a new FSM restored from b.
func restored(t *testing.T, b []byte) *fsm.FSM {
	t.Helper()
	f := fsm.New()
	if err := f.Restore(nopCloser{bytes.NewReader(b)}); err != nil {
		t.Fatalf("restore: %v", err)
	}
	return f
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

// readyAsset adds a completed 10-byte PNG asset to an account.
func (w *world) readyAsset(account, id string) fsm.Asset {
	w.t.Helper()
	w.must(&fsm.CreateAsset{Asset: fsm.Asset{ID: id, AccountID: account, Filename: id + ".png", ContentType: "image/png",
		Size: 10, BlobKey: "assets/" + id + ".png", CreatedAt: t0}})
	return must(w, &fsm.CompleteAsset{AssetID: id, AccountID: account, StoredSize: 10, ContentType: "image/png", Now: t0 + 1})
}

// applyAll applies c as log entry index to every FSM, the way Raft does,
// and fails the test on a refusal.
func applyAll(t *testing.T, index uint64, c fsm.Command, fsms ...*fsm.FSM) {
	t.Helper()
	data, err := fsm.Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fsms {
		if res := f.Apply(&raft.Log{Index: index, Term: 1, Type: raft.LogCommand, Data: data}).(*fsm.Result); res.Err != nil {
			t.Fatalf("%s: %v", c.Type(), res.Err)
		}
	}
}
