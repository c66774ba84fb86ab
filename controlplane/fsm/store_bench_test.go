package fsm_test

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/internal/gcstat"
)

// BenchmarkListVideos lists the newest 100 videos, and 100 from deep in the
// history, of an account with VIDFARM_BENCH_VIDEOS finished videos (default
// 100,000; make bench uses a million) in a state file: the target is
// 20 ms at a million. Filling goes through the real commands and checkpoints.
func BenchmarkListVideos(b *testing.B) {
	n := envInt("VIDFARM_BENCH_VIDEOS", 100_000)
	f, must := benchStore(b)
	start := time.Now()
	must(&fsm.CreateFolder{FolderID: "fo", AccountID: "a", Name: "f", Now: t0})
	for i := range n {
		id := fmt.Sprintf("vid_%08d", i)
		spec := manualSpec("p")
		if i%10 == 0 {
			spec.FolderID = "fo"
		}
		must(&fsm.CreateVideo{VideoID: id, AccountID: "a", Spec: spec, Price: 1, Now: t0 + int64(i)})
		must(&fsm.FailVideo{VideoID: id, Reason: "r", Now: t0 + int64(i)})
		if i%65536 == 65535 { // memory stays bounded; each checkpoint streams everything
			checkpoint(b, f)
		}
	}
	checkpoint(b, f)
	ts := f.TierStats()
	b.Logf("%d videos filled and checkpointed in %s: %d on disk, state file %d MB", n, time.Since(start).Round(time.Millisecond), ts.VideosOnDisk, ts.StoreBytes>>20)
	// And an account with VIDFARM_BENCH_QUEUED videos queued (default
	// 50,000), held in memory: a page from the middle of it starts at its
	// cursor, not by stepping over the videos before it.
	q := envInt("VIDFARM_BENCH_QUEUED", 50_000)
	must(&fsm.CreateAccount{AccountID: "q", Name: "q", Plan: fsm.PlanMax, Credits: 1 << 40, KeyID: "kq", KeyHash: keyHash("kq"), KeyHint: "kq", Now: t0})
	for i := range q {
		must(&fsm.CreateVideo{VideoID: fmt.Sprintf("vid_q%08d", i), AccountID: "q", Spec: manualSpec("p"), Price: 1, Now: t0 + int64(n+i)})
	}
	cursorOf := func(account string, k int) string {
		deep, err := f.ListVideos(account, fsm.VideoFilter{Limit: k})
		if err != nil {
			b.Fatal(err)
		}
		return deep.Videos[len(deep.Videos)-1].ID
	}
	cursor := cursorOf("a", n/2)
	for _, bc := range []struct {
		name, account string
		flt           fsm.VideoFilter
	}{
		{"newest", "a", fsm.VideoFilter{Limit: 100}},
		{"middle", "a", fsm.VideoFilter{Limit: 100, StartingAfter: cursor}},
		{"folder", "a", fsm.VideoFilter{Limit: 100, FolderID: "fo"}},
		{"status", "a", fsm.VideoFilter{Limit: 100, Status: fsm.StatusFailed, StartingAfter: cursor}},
		{"queued_middle", "q", fsm.VideoFilter{Limit: 100, StartingAfter: cursorOf("q", q/2)}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				page, err := f.ListVideos(bc.account, bc.flt)
				if err != nil || len(page.Videos) != 100 {
					b.Fatalf("%d videos, %v", len(page.Videos), err)
				}
			}
		})
	}
}

// BenchmarkCheckpointDeepQueue measures a checkpoint of a state file while
// one account has VIDFARM_BENCH_QUEUED videos queued (default 50,000), each
// created with an idempotency key: each iteration creates VIDFARM_BENCH_BATCH
// more (default 100; Raft snapshots on its own every 8192 entries), then
// takes the Raft snapshot (copy-ms: the time applies wait on the lock) and
// persists it (persist-ms: the write, applies going on). The queue is what
// a checkpoint must not copy whole.
func BenchmarkCheckpointDeepQueue(b *testing.B) {
	n, batch := envInt("VIDFARM_BENCH_QUEUED", 50_000), envInt("VIDFARM_BENCH_BATCH", 100)
	f, must := benchStore(b)
	next := 0
	create := func() {
		id := fmt.Sprintf("vid_%08d", next)
		must(&fsm.CreateVideo{VideoID: id, AccountID: "a", Spec: manualSpec("p"), Price: 1, Now: t0 + int64(next),
			IdempotencyKey: "idem-" + id, BodyHash: sha256.Sum256([]byte(id))})
		next++
	}
	start := time.Now()
	for range n {
		create()
	}
	checkpoint(b, f)
	b.Logf("%d videos queued and checkpointed in %s", n, time.Since(start).Round(time.Millisecond))
	var copyTime, persistTime time.Duration
	for b.Loop() {
		for range batch {
			create()
		}
		t := time.Now()
		snap, err := f.Snapshot()
		if err != nil {
			b.Fatal(err)
		}
		copyTime += time.Since(t)
		t = time.Now()
		if err := snap.Persist(discardSink{}); err != nil {
			b.Fatal(err)
		}
		persistTime += time.Since(t)
	}
	b.ReportMetric(float64(copyTime.Microseconds())/1000/float64(b.N), "copy-ms")
	b.ReportMetric(float64(persistTime.Microseconds())/1000/float64(b.N), "persist-ms")
}

// BenchmarkHistoryHeap measures the heap a state keeps per video of
// history: VIDFARM_BENCH_HISTORY videos (default 20,000), each created with
// an idempotency key, failed, and its webhook delivered, with a checkpoint
// every 8192 videos as Raft takes them. "memory" is a state without a file
// (everything on the heap), "file" one with a state file, where the videos,
// idempotency records, events and finished deliveries are on disk.
func BenchmarkHistoryHeap(b *testing.B) {
	n := envInt("VIDFARM_BENCH_HISTORY", 20_000)
	// file+backlog: the app bridge's export is on and the app database never
	// acknowledges, so every charge, refund and status change waits in the
	// outbox.
	for _, mode := range []string{"memory", "file", "file+backlog"} {
		b.Run(mode, func(b *testing.B) {
			var perVideo float64
			for b.Loop() {
				perVideo = historyHeap(b, mode != "memory", mode == "file+backlog", n)
			}
			b.ReportMetric(perVideo, "heap-B/video")
		})
	}
}

func historyHeap(b *testing.B, file, export bool, n int) float64 {
	var f *fsm.FSM
	must := func(c fsm.Command) {
		if _, err := f.ApplyCommand(c); err != nil {
			b.Fatal(err)
		}
	}
	before := heapAlloc()
	if file {
		f, must = benchStore(b)
	} else {
		f = fsm.New()
		must(&fsm.CreateAccount{AccountID: "a", Name: "a", Plan: fsm.PlanMax, Credits: 1 << 40, KeyID: "k", KeyHash: keyHash("k"), KeyHint: "k", Now: t0})
	}
	must(&fsm.CreateWebhook{WebhookID: "whk_1", AccountID: "a", URL: "https://h.example/1", Events: []string{fsm.EventVideoFailed}, Secret: "whsec_1", Now: t0})
	if export {
		must(&fsm.SetAppExport{On: true, Now: t0})
	}
	for i := range n {
		id := fmt.Sprintf("vid_%08d", i)
		must(&fsm.CreateVideo{VideoID: id, AccountID: "a", Spec: manualSpec("a prompt of a typical length, about a hundred characters, for a manual render"), Price: 1, Now: t0 + int64(i),
			IdempotencyKey: "idem-" + id, BodyHash: sha256.Sum256([]byte(id))})
		must(&fsm.FailVideo{VideoID: id, Reason: "r", Now: t0 + int64(i)})
		must(&fsm.RecordDelivery{EventID: fsm.EventID(id), WebhookID: "whk_1", At: t0 + int64(i), Status: 200, LatencyMS: 3})
		if file && i%8192 == 8191 {
			checkpoint(b, f)
		}
	}
	if file {
		checkpoint(b, f)
	}
	held := heapAlloc() - before
	if st := f.Stats(); st.Idempotency != n || st.Deliveries != n {
		b.Fatalf("%+v: want %d idempotency records and deliveries", st, n)
	}
	if a := f.AppExport(); export && (a.PendingLedger < 2*n || a.PendingEvents < 2*n) {
		b.Fatalf("%+v: want a charge, a refund and two video events per video waiting", a)
	}
	return float64(held) / float64(n)
}

// heapAlloc is the live heap's bytes after full collections (gcstat.Live).
func heapAlloc() int64 {
	_, bytes := gcstat.Live()
	return int64(bytes)
}

// envInt is the positive integer in environment variable name, or def.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// benchStore opens an FSM with a state file holding account "a" (max plan,
// credits without end), and returns it with an apply that fails b on a
// refusal.
func benchStore(b *testing.B) (*fsm.FSM, func(fsm.Command)) {
	f, err := fsm.Open(filepath.Join(b.TempDir(), "state.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	must := func(c fsm.Command) {
		if _, err := f.ApplyCommand(c); err != nil {
			b.Fatal(err)
		}
	}
	must(&fsm.CreateAccount{AccountID: "a", Name: "a", Plan: fsm.PlanMax, Credits: 1 << 40, KeyID: "k", KeyHash: keyHash("k"), KeyHint: "k", Now: t0})
	return f, must
}

// checkpoint writes f's checkpoint, streaming the snapshot nowhere.
func checkpoint(b testing.TB, f *fsm.FSM) {
	snap, err := f.Snapshot()
	if err != nil {
		b.Fatal(err)
	}
	if err := snap.Persist(discardSink{}); err != nil {
		b.Fatal(err)
	}
}

type discardSink struct{}

func (discardSink) Write(p []byte) (int, error) { return len(p), nil }
func (discardSink) ID() string                  { return "discard" }
func (discardSink) Cancel() error               { return nil }
func (discardSink) Close() error                { return nil }

// BenchmarkQueueHeap measures the heap a state keeps per queued video:
// VIDFARM_BENCH_QUEUE manual videos (default 20,000) waiting with nothing
// to run them, checkpointed every 8192 as Raft would, in a state with a file.
func BenchmarkQueueHeap(b *testing.B) {
	n := envInt("VIDFARM_BENCH_QUEUE", 20_000)
	var perVideo float64
	for b.Loop() {
		before := heapAlloc()
		f, must := benchStore(b)
		for i := range n {
			id := fmt.Sprintf("vid_%08d", i)
			must(&fsm.CreateVideo{VideoID: id, AccountID: "a", Spec: manualSpec("a prompt of a typical length, about a hundred characters, for a manual render"),
				Price: 1, Now: t0 + int64(i), IdempotencyKey: "idem-" + id, BodyHash: sha256.Sum256([]byte(id))})
			if i%8192 == 8191 {
				checkpoint(b, f)
			}
		}
		checkpoint(b, f)
		perVideo = float64(heapAlloc()-before) / float64(n)
		if st := f.Stats(); st.Queued != n {
			b.Fatalf("%+v: want %d queued", st, n)
		}
	}
	b.ReportMetric(perVideo, "heap-B/video")
}

// BenchmarkWriteCheckpoint measures streaming a checkpoint to a follower
// (WriteCheckpoint) while VIDFARM_BENCH_QUEUED videos (default 50,000) are
// queued: the hot part is read from the state file once more, and the task
// graphs are written out as they were read.
func BenchmarkWriteCheckpoint(b *testing.B) {
	n := envInt("VIDFARM_BENCH_QUEUED", 50_000)
	f, must := benchStore(b)
	for i := range n {
		id := fmt.Sprintf("vid_%08d", i)
		must(&fsm.CreateVideo{VideoID: id, AccountID: "a", Spec: manualSpec("p"), Price: 1, Now: t0 + int64(i)})
	}
	snap, err := f.Snapshot()
	if err != nil {
		b.Fatal(err)
	}
	var marker bytes.Buffer
	if err := snap.Persist(&bufSink{&marker}); err != nil {
		b.Fatal(err)
	}
	index, ok := fsm.CheckpointMarker(marker.Bytes())
	if !ok {
		b.Fatal("the snapshot of a state with a file is not a checkpoint marker")
	}
	var size int64
	for b.Loop() {
		var w countingWriter
		if err := f.WriteCheckpoint(&w, index); err != nil {
			b.Fatal(err)
		}
		size = int64(w)
	}
	b.ReportMetric(float64(size)/float64(n), "B/video")
}

type bufSink struct{ *bytes.Buffer }

func (bufSink) ID() string    { return "buf" }
func (bufSink) Cancel() error { return nil }
func (bufSink) Close() error  { return nil }

type countingWriter int64

func (w *countingWriter) Write(p []byte) (int, error) {
	*w += countingWriter(len(p))
	return len(p), nil
}

// BenchmarkCheckpointEvents measures the checkpoints of a create-only load
// with the event log on, once VIDFARM_BENCH_LOGGED events (default 100,000)
// are in the file: each iteration applies 8192 creates (untimed, the Raft
// snapshot interval) and writes their checkpoint, whose allocations and time
// are the op's. pages/create is what the checkpoint wrote to the file per
// create. "hashed" gives the created events ids hashed from their videos',
// "sortable" ids that sort by the events' time (SortableEventIDs).
func BenchmarkCheckpointEvents(b *testing.B) {
	const interval = 8192
	for _, sortable := range []bool{false, true} {
		name := map[bool]string{false: "hashed", true: "sortable"}[sortable]
		b.Run(name, func(b *testing.B) {
			f, must := benchStore(b)
			var pages int64
			f.SetObserver(fsm.Observer{Written: func(n int64) { pages += n }})
			must(&fsm.StartEventLog{Now: t0})
			if sortable {
				must(&fsm.SortableEventIDs{Now: t0})
			}
			next := 0
			creates := func(n int) {
				for range n {
					must(&fsm.CreateVideo{VideoID: fmt.Sprintf("vid_%010d", next), AccountID: "a", Spec: manualSpec("p"), Price: 1, Now: t0 + int64(next)})
					next++
				}
			}
			for range envInt("VIDFARM_BENCH_LOGGED", 100_000) / interval {
				creates(interval)
				checkpoint(b, f)
			}
			pages = 0
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				creates(interval)
				b.StartTimer()
				checkpoint(b, f)
			}
			b.ReportMetric(float64(pages)/float64(b.N*interval), "pages/create")
		})
	}
}
