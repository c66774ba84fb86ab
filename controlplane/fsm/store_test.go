package fsm_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/hashicorp/raft"
	"pgregory.net/rapid"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// logged applies c to f as log entry index and returns the answer.
func logged(t *rapid.T, f *fsm.FSM, index uint64, data []byte) answer {
	out := f.Apply(&raft.Log{Index: index, Term: 1, Type: raft.LogCommand, Data: data})
	res, ok := out.(*fsm.Result)
	if !ok {
		t.Fatalf("Apply at %d returned %T", index, out)
	}
	return answerOf(res.Value, res.Err)
}

func openStore(t *rapid.T, path string) *fsm.FSM {
	f, err := fsm.Open(path)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	// Applies stage records for the next checkpoint from this many entries
	// after a snapshot (0: never), so that checkpoints take staged records,
	// fresh ones, and ones changed after they were staged.
	f.SetStageAfter(uint64(rapid.IntRange(0, 3).Draw(t, "stage_after")))
	return f
}

// persistLate persists a snapshot taken earlier, entries ago, or releases
// it unpersisted, as Raft may. A newer checkpoint written meanwhile makes
// it fail with fsm.ErrCheckpointGone, which loses nothing.
func persistLate(t *rapid.T, snap raft.FSMSnapshot) {
	defer snap.Release()
	if rapid.Bool().Draw(t, "never_persisted") {
		return
	}
	var sink memSink
	if err := snap.Persist(&sink); err != nil && !errors.Is(err, fsm.ErrCheckpointGone) {
		t.Fatalf("persist a snapshot taken earlier: %v", err)
	}
}

// TestStoreMatchesMemory runs the same log through an FSM that keeps
// everything in memory and one with a state file, which checkpoints (moving
// finished videos to disk) and restarts (loading the file and replaying the
// log from an earlier snapshot, as Raft does) at random moments. Every answer,
// every read and every snapshot byte must be the same.
func TestStoreMatchesMemory(t *testing.T) {
	var onDisk, crossed int // runs that moved videos to disk, and listed across tiers
	var logCrossed int      // runs whose event log was in both tiers
	defer func() {
		t.Logf("runs with videos on disk: %d, with both tiers: %d, event log in both tiers: %d", onDisk, crossed, logCrossed)
		if !t.Failed() && (onDisk == 0 || crossed == 0 || logCrossed == 0) {
			t.Errorf("no run moved a video to disk (%d), listed both tiers (%d) or kept events in both (%d): the generator misses the store",
				onDisk, crossed, logCrossed)
		}
	}()
	rapid.Check(t, func(rt *rapid.T) {
		path := tempStorePath(rt)
		g := newCmdGen()
		g.farm = rapid.IntRange(0, 2).Draw(rt, "farm") == 0
		mem, disk := fsm.New(), openStore(rt, path)
		defer func() { disk.Close() }()
		var entries [][]byte
		var late raft.FSMSnapshot // taken, not yet persisted
		for range rapid.IntRange(1, 200).Draw(rt, "n") {
			switch rapid.IntRange(0, 19).Draw(rt, "what") {
			case 2: // a snapshot persisted entries after it was taken
				if late != nil {
					persistLate(rt, late)
					late = nil
					break
				}
				var err error
				if late, err = disk.Snapshot(); err != nil {
					rt.Fatal(err)
				}
			case 0: // a checkpoint
				if !bytes.Equal(snapshotBytes(t, mem), snapshotBytes(t, disk)) {
					rt.Fatal("the snapshot of the FSM with a store differs from the one in memory")
				}
			case 1: // a restart, replaying from an earlier snapshot
				if late != nil {
					persistLate(rt, late)
					late = nil
				}
				if err := disk.Close(); err != nil {
					rt.Fatal(err)
				}
				disk = openStore(rt, path)
				cp := disk.CheckpointIndex()
				from := rapid.Uint64Range(0, cp).Draw(rt, "replay_from")
				for i := from + 1; i <= uint64(len(entries)); i++ {
					out := disk.Apply(&raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: entries[i-1]})
					if (out == nil) != (i <= cp) {
						rt.Fatalf("replay of entry %d (checkpoint %d) answered %v", i, cp, out)
					}
				}
				if disk.AppliedIndex() != uint64(len(entries)) && len(entries) > 0 {
					rt.Fatalf("after replay the store has applied %d of %d entries", disk.AppliedIndex(), len(entries))
				}
				// What the file held plus the replay is the whole state: a change
				// a checkpoint missed shows here.
				if !bytes.Equal(snapshotBytes(t, mem), snapshotBytes(t, disk)) {
					rt.Fatal("after a restart the FSM with a store differs from the one in memory")
				}
			default:
				c := g.next(rt)
				switch {
				case g.farm:
				case rapid.IntRange(0, 2).Draw(rt, "rich_video") == 0:
					// A busy account: many videos, some in folders.
					c = g.richVideo(rt)
				case len(g.videos) > 0 && rapid.IntRange(0, 1).Draw(rt, "finish") == 0:
					// Videos finish more often than the generator makes them,
					// so that checkpoints have something to move to disk.
					v := rapid.SampledFrom(g.videos).Draw(rt, "fail_video")
					c = &fsm.FailVideo{VideoID: v, Reason: "operator", Now: g.now}
					if rapid.IntRange(0, 3).Draw(rt, "cancel") == 0 {
						c = &fsm.CancelVideo{VideoID: v, AccountID: g.videoAcct[v], Now: g.now}
					}
				}
				data, err := fsm.Encode(c)
				if err != nil {
					rt.Fatal(err)
				}
				entries = append(entries, data)
				i := uint64(len(entries))
				a, b := logged(rt, mem, i, data), logged(rt, disk, i, data)
				if !reflect.DeepEqual(a, b) {
					rt.Fatalf("%s answered differently:\n%#v\n%#v", c.Type(), a, b)
				}
				g.learn(mem, a)
			}
		}
		if n, ts := disk.Stats().LoggedEvents, disk.TierStats(); ts.TableMemory["event_log"] > 0 && ts.TableMemory["event_log"] < n {
			logCrossed++
		}
		if ts := disk.TierStats(); ts.VideosOnDisk > 0 {
			onDisk++
			if ts.VideosInMemory > 0 {
				crossed++
			}
		}
		if late != nil {
			persistLate(rt, late)
		}
		sameReads(rt, g, mem, disk)
		sameListings(rt, g, mem, disk)
		if !bytes.Equal(snapshotBytes(t, mem), snapshotBytes(t, disk)) {
			rt.Fatal("final snapshots differ")
		}
		var b1, b2 bytes.Buffer
		if err := mem.WriteBackup(&b1); err != nil {
			rt.Fatal(err)
		}
		if err := disk.WriteBackup(&b2); err != nil {
			rt.Fatal(err)
		}
		if !bytes.Equal(b1.Bytes(), b2.Bytes()) {
			rt.Fatal("backups differ")
		}
	})
}

// sameListings compares filtered and paged listings.
func sameListings(t *rapid.T, g *cmdGen, a, b *fsm.FSM) {
	sameEventLogs(t, g, a, b)
	for _, wh := range g.webhooks {
		after := ""
		for range 100 { // each endpoint's deliveries, two at a time
			x, errx := a.WebhookDeliveries(wh[1], wh[0], after, 2)
			y, erry := b.WebhookDeliveries(wh[1], wh[0], after, 2)
			if !reflect.DeepEqual(answerOf(x, errx), answerOf(y, erry)) {
				t.Fatalf("deliveries of %s after %q differ:\n%#v\n%#v", wh[0], after, x, y)
			}
			if errx != nil || !x.HasMore {
				break
			}
			after = x.Deliveries[len(x.Deliveries)-1].ID()
		}
	}
	for _, id := range g.accounts {
		flts := []fsm.VideoFilter{{Limit: 2}}
		for _, st := range []string{fsm.StatusQueued, fsm.StatusProcessing, fsm.StatusCompleted, fsm.StatusFailed, fsm.StatusPreview, fsm.StatusCanceled} {
			flts = append(flts, fsm.VideoFilter{Status: st, Limit: 2})
			for _, fo := range g.folders[id] {
				flts = append(flts, fsm.VideoFilter{Status: st, FolderID: fo, Limit: 2})
			}
		}
		for _, fo := range g.folders[id] {
			flts = append(flts, fsm.VideoFilter{FolderID: fo, Limit: 1})
		}
		for _, flt := range flts {
			// Page through to the end, comparing every page.
			for range 100 {
				x, errx := a.ListVideos(id, flt)
				y, erry := b.ListVideos(id, flt)
				if !reflect.DeepEqual(answerOf(x, errx), answerOf(y, erry)) {
					t.Fatalf("listing %s %+v differs:\n%#v\n%#v", id, flt, x, y)
				}
				if errx != nil || !x.HasMore {
					break
				}
				flt.StartingAfter = x.Videos[len(x.Videos)-1].ID
			}
		}
	}
}

// TestStoreRestore restores a snapshot taken in memory into an FSM with a
// store (as a follower that falls behind does), restarts it, and checks that
// it answers and snapshots as the original does, then goes on in step.
func TestStoreRestore(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		path := tempStorePath(rt)
		g := newCmdGen()
		orig, twin := fsm.New(), fsm.New()
		for range rapid.IntRange(1, 150).Draw(rt, "n") {
			g.step(rt, t, orig, twin)
		}
		snap := snapshotBytes(t, orig)
		disk := openStore(rt, path)
		// Something to replace: a store that already holds a state.
		if err := disk.Restore(nopCloser{bytes.NewReader(snapshotBytes(t, restored(t, sampleSnapshot(t))))}); err != nil {
			rt.Fatal(err)
		}
		if err := disk.Restore(nopCloser{bytes.NewReader(snap)}); err != nil {
			rt.Fatalf("restore into store: %v", err)
		}
		if !bytes.Equal(snapshotBytes(t, disk), snap) {
			rt.Fatal("the restored store snapshots to other bytes")
		}
		if err := disk.Close(); err != nil {
			rt.Fatal(err)
		}
		disk = openStore(rt, path)
		defer func() { disk.Close() }()
		if disk.CheckpointIndex() != orig.AppliedIndex() {
			rt.Fatalf("checkpoint index %d after restore, want %d", disk.CheckpointIndex(), orig.AppliedIndex())
		}
		sameReads(rt, g, orig, disk)
		sameListings(rt, g, orig, disk)
		for range rapid.IntRange(0, 60).Draw(rt, "more") {
			g.step(rt, t, orig, disk)
		}
		if !bytes.Equal(snapshotBytes(t, orig), snapshotBytes(t, disk)) {
			rt.Fatal("original and restored store diverged after more commands")
		}
	})
}

// richVideo creates a video for an account with credits enough for hundreds;
// its first calls make the account and two folders.
func (g *cmdGen) richVideo(t *rapid.T) fsm.Command {
	const rich = "acct_rich"
	switch fs := g.folders[rich]; {
	case !slices.Contains(g.accounts, rich):
		g.accounts = append(g.accounts, rich)
		return &fsm.CreateAccount{AccountID: rich, Name: "rich", Plan: fsm.PlanMax, Credits: 1 << 30,
			KeyID: "key_rich", KeyHash: keyHash("key_rich"), KeyHint: "key_r", Now: g.now}
	case len(fs) < 2:
		id := g.id("fld")
		g.folders[rich] = append(fs, id)
		return &fsm.CreateFolder{FolderID: id, AccountID: rich, Name: "f" + id, Now: g.now}
	}
	id := g.id("vid")
	g.videos = append(g.videos, id)
	g.videoAcct[id] = rich
	spec := fsm.Spec{Mode: fsm.ModeAuto, Prompt: "p" + id, DurationSeconds: 5, Orientation: "portrait"}
	if i := rapid.IntRange(0, 2).Draw(t, "rich_folder"); i > 0 {
		spec.FolderID = g.folders[rich][i-1]
	}
	return &fsm.CreateVideo{VideoID: id, AccountID: rich, Spec: spec, Price: 10, Now: g.now}
}

// tempStorePath is a state file path in a directory removed after the run;
// rapid's T has no TempDir.
func tempStorePath(t *rapid.T) string {
	dir, err := os.MkdirTemp("", "fsm-store")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "state.db")
}

// TestCheckpointWhileApplying takes checkpoints while commands are applied and
// listings read from another goroutine, as Raft does (Persist runs beside
// Apply): every listing must show each video once, in order, with a total
// that matches, whichever side of a checkpoint it reads.
func TestCheckpointWhileApplying(t *testing.T) {
	f, err := fsm.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const n = 600
	w := &world{t: t, f: f, a: appliers[1]}
	w.must(&fsm.CreateAccount{AccountID: "a", Name: "a", Plan: fsm.PlanMax, Credits: 1 << 30, KeyID: "k", KeyHash: keyHash("k"), KeyHint: "k", Now: t0})
	done := make(chan struct{})
	checkpoints := untilDone(done, func() error {
		snap, err := f.Snapshot()
		if err != nil {
			return err
		}
		return snap.Persist(&memSink{})
	})
	readers := untilDone(done, func() error {
		page, err := f.ListVideos("a", fsm.VideoFilter{Limit: n})
		if err != nil {
			return err
		}
		if len(page.Videos) != page.Total {
			return fmt.Errorf("listing shows %d videos, total says %d", len(page.Videos), page.Total)
		}
		for i := 1; i < len(page.Videos); i++ {
			if page.Videos[i-1].ID <= page.Videos[i].ID {
				return fmt.Errorf("listing out of order or repeated at %d: %s then %s", i, page.Videos[i-1].ID, page.Videos[i].ID)
			}
		}
		return nil
	})
	for i := range n {
		id := fmt.Sprintf("v%05d", i)
		w.must(createVideo(id, "a", 1, "", "", t0+int64(i)))
		w.must(&fsm.FailVideo{VideoID: id, Reason: "r", Now: t0 + int64(i)})
	}
	close(done)
	for _, errs := range []<-chan error{checkpoints, readers} {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if ts := f.TierStats(); ts.VideosOnDisk == 0 {
		t.Fatalf("no checkpoint moved a video to disk: %+v", ts)
	}
	page, _ := f.ListVideos("a", fsm.VideoFilter{Limit: n})
	if len(page.Videos) != n || page.Total != n {
		t.Fatalf("%d videos listed, total %d, want %d", len(page.Videos), page.Total, n)
	}
}

func TestBenchFill(t *testing.T) {
	f, err := fsm.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := &world{t: t, f: f, a: appliers[1]}
	w.account("a", fsm.PlanPro, 10)
	for _, tc := range []struct {
		name string
		c    fsm.BenchFill
		err  error
	}{
		{"no account", fsm.BenchFill{AccountID: "nobody", IDPrefix: "vid_f", Count: 1}, fsm.ErrAccountNotFound},
		{"zero", fsm.BenchFill{AccountID: "a", IDPrefix: "vid_f", Count: 0}, fsm.ErrInvalidCommand},
		{"too many", fsm.BenchFill{AccountID: "a", IDPrefix: "vid_f", Count: fsm.MaxBenchFill + 1}, fsm.ErrInvalidCommand},
		{"no prefix", fsm.BenchFill{AccountID: "a", Count: 1}, fsm.ErrInvalidCommand},
		{"fills", fsm.BenchFill{AccountID: "a", IDPrefix: "vid_f", Count: 1500}, nil},
		{"again, same ids", fsm.BenchFill{AccountID: "a", IDPrefix: "vid_f", First: 1499, Count: 10}, fsm.ErrInvalidCommand},
		{"more", fsm.BenchFill{AccountID: "a", IDPrefix: "vid_f", First: 1500, Count: 500}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := w.apply(&tc.c)
			wantErr(t, err, tc.err)
		})
	}
	if _, err := f.Snapshot(); err != nil {
		t.Fatal(err)
	}
	snapshotBytes(t, f)
	if ts := f.TierStats(); ts.VideosOnDisk != 2000 || ts.VideosInMemory != 0 {
		t.Fatalf("after a checkpoint: %+v", ts)
	}
	page, err := f.ListVideos("a", fsm.VideoFilter{Status: fsm.StatusCompleted, Limit: 2})
	if err != nil || page.Total != 2000 || page.Videos[0].ID != "vid_f0000001999" || page.Videos[1].ID != "vid_f0000001998" {
		t.Fatalf("listing %+v %v", page, err)
	}
	if a, _ := f.Account("a"); a.Credits != 10 {
		t.Fatalf("bench fill charged: balance %d", a.Credits)
	}
}

// untilDone runs step in a goroutine again and again until done is closed or
// step fails; the channel gets the first error, or nil.
func untilDone(done <-chan struct{}, step func() error) <-chan error {
	out := make(chan error, 1)
	go func() {
		for {
			select {
			case <-done:
				out <- nil
				return
			default:
			}
			if err := step(); err != nil {
				out <- err
				return
			}
		}
	}()
	return out
}

// TestStoreKeepsWebhookOutbox: events and deliveries, kept one record per key
// in the state file, survive checkpoints and restarts through every change a
// delivery goes through (created, attempted, finished, pruned), byte for byte
// the state of an FSM that never left memory.
func TestStoreKeepsWebhookOutbox(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	mem := fsm.New()
	disk, err := fsm.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { disk.Close() }()
	index := uint64(0)
	apply := func(c fsm.Command) {
		t.Helper()
		index++
		applyAll(t, index, c, mem, disk)
	}
	// restart checkpoints the file, reopens it and compares with memory.
	restart := func(when string) {
		t.Helper()
		snapshotBytes(t, disk)
		if err := disk.Close(); err != nil {
			t.Fatal(err)
		}
		if disk, err = fsm.Open(path); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(snapshotBytes(t, mem), snapshotBytes(t, disk)) {
			t.Fatalf("%s: the state file's outbox differs from memory", when)
		}
		if got, want := disk.Deliveries(fsm.DeliveryFilter{}), mem.Deliveries(fsm.DeliveryFilter{}); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: deliveries after restart\n%+v\nwant\n%+v", when, got, want)
		}
	}
	now := t0
	apply(&fsm.CreateAccount{AccountID: "a", Name: "a", Plan: fsm.PlanPro, Credits: 100, KeyID: "k", KeyHash: keyHash("k"), KeyHint: "k", Now: now})
	apply(&fsm.CreateWebhook{WebhookID: "whk_1", AccountID: "a", URL: "https://h.example/1", Events: []string{fsm.EventVideoFailed}, Secret: "whsec_1", Now: now})
	apply(&fsm.CreateWebhook{WebhookID: "whk_2", AccountID: "a", URL: "https://h.example/2", Events: []string{fsm.EventVideoFailed}, Secret: "whsec_2", Now: now})
	apply(&fsm.CreateVideo{VideoID: "vid_1", AccountID: "a", Spec: manualSpec("p"), Price: 1, Now: now})
	apply(&fsm.FailVideo{VideoID: "vid_1", Reason: "operator", Now: now})
	if n := len(mem.Deliveries(fsm.DeliveryFilter{})); n != 2 {
		t.Fatalf("%d deliveries, want 2", n)
	}
	restart("created")
	apply(&fsm.DeleteWebhook{WebhookID: "whk_2", AccountID: "a", Now: now})
	restart("cancelled with its endpoint")
	apply(&fsm.RecordDelivery{EventID: fsm.EventID("vid_1"), WebhookID: "whk_1", At: now + 1e9, Status: 500, LatencyMS: 5})
	restart("attempted")
	apply(&fsm.RecordDelivery{EventID: fsm.EventID("vid_1"), WebhookID: "whk_1", At: now + 2e9, Status: 200, LatencyMS: 5})
	restart("delivered")
	apply(&fsm.PruneDeliveries{Before: now + 3e9})
	if n := len(mem.Deliveries(fsm.DeliveryFilter{})); n != 0 {
		t.Fatalf("%d deliveries after pruning, want 0", n)
	}
	restart("pruned")
}
