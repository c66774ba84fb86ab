package fsm_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// BenchmarkListVideos lists the newest 100 videos, and 100 from deep in the
// history, of an account with VIDFARM_BENCH_VIDEOS finished videos (default
// 100,000; make bench uses a million) in a state file: the target is
// 20 ms at a million. Filling goes through the real commands and checkpoints.
func BenchmarkListVideos(b *testing.B) {
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("VIDFARM_BENCH_VIDEOS")); err == nil && v > 0 {
		n = v
	}
	f, err := fsm.Open(filepath.Join(b.TempDir(), "state.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	start := time.Now()
	must := func(c fsm.Command) {
		if _, err := f.ApplyCommand(c); err != nil {
			b.Fatal(err)
		}
	}
	must(&fsm.CreateAccount{AccountID: "a", Name: "a", Plan: fsm.PlanMax, Credits: 1 << 40, KeyID: "k", KeyHash: keyHash("k"), KeyHint: "k", Now: t0})
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
	deep, err := f.ListVideos("a", fsm.VideoFilter{Limit: n / 2})
	if err != nil {
		b.Fatal(err)
	}
	cursor := deep.Videos[len(deep.Videos)-1].ID
	for _, bc := range []struct {
		name string
		flt  fsm.VideoFilter
	}{
		{"newest", fsm.VideoFilter{Limit: 100}},
		{"middle", fsm.VideoFilter{Limit: 100, StartingAfter: cursor}},
		{"folder", fsm.VideoFilter{Limit: 100, FolderID: "fo"}},
		{"status", fsm.VideoFilter{Limit: 100, Status: fsm.StatusFailed, StartingAfter: cursor}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				page, err := f.ListVideos("a", bc.flt)
				if err != nil || len(page.Videos) != 100 {
					b.Fatalf("%d videos, %v", len(page.Videos), err)
				}
			}
		})
	}
}

// checkpoint writes f's checkpoint, streaming the snapshot nowhere.
func checkpoint(b *testing.B, f *fsm.FSM) {
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
