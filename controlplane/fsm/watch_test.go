package fsm_test

import (
	"fmt"
	"testing"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// TestFollowVideo follows a queued video through the watch: the start, a
// change of its queue position and its cancel, each named by the index of
// the entry that made it; nothing for entries that do not change it; the
// history kept and what a subscriber that fell behind it is told.
func TestFollowVideo(t *testing.T) {
	for _, a := range appliers {
		t.Run(a.name, func(t *testing.T) {
			w := newWorld(t, a)
			w.account("a", fsm.PlanPro, 10_000)
			w.account("b", fsm.PlanPro, 100)
			const ahead = fsm.ChangeHistory + 6
			for i := range ahead {
				w.video(fmt.Sprintf("v%02d", i), "a", 1)
			}
			w.video("watched", "a", 1)
			if _, ok := w.f.Follow("b", "watched"); ok {
				t.Fatal("another account follows the video")
			}
			sub, ok := w.f.Follow("a", "watched")
			if !ok {
				t.Fatal("the owner cannot follow the video")
			}
			defer sub.Close()
			start := sub.Latest()
			if start.Index != w.f.AppliedIndex() || start.Video.Status != fsm.StatusQueued || start.Video.QueuePosition != ahead+1 {
				t.Fatalf("start %d %s at %d, want queued at %d at index %d", start.Index, start.Video.Status, start.Video.QueuePosition, ahead+1, w.f.AppliedIndex())
			}
			// A video queued behind it changes nothing of it, nor do credits.
			w.video("behind", "a", 1)
			w.must(&fsm.GrantCredits{AccountID: "a", Amount: 5, Now: t0})
			if changes, complete := sub.Since(start.Index); len(changes) != 0 || !complete || len(sub.Wake) != 0 {
				t.Fatalf("after a video queued behind: %d changes (complete %v), woken %v", len(changes), complete, len(sub.Wake) != 0)
			}
			// Each cancel ahead moves it up: one change at that entry.
			for i := range ahead {
				must(w, &fsm.CancelVideo{VideoID: fmt.Sprintf("v%02d", i), AccountID: "a", Now: t0})
				l := sub.Latest()
				if l.Index != w.f.AppliedIndex() || l.Video.QueuePosition != uint64(ahead-i) || len(sub.Wake) != 1 {
					t.Fatalf("after cancel %d: latest at %d position %d (applied %d), woken %v", i, l.Index, l.Video.QueuePosition, w.f.AppliedIndex(), len(sub.Wake) == 1)
				}
				if i == 0 {
					if changes, complete := sub.Since(start.Index); len(changes) != 1 || !complete || changes[0] != l {
						t.Fatalf("since the start: %d changes, complete %v", len(changes), complete)
					}
				}
			}
			<-sub.Wake
			// The start is no longer kept: a subscriber still there resyncs.
			if _, complete := sub.Since(start.Index); complete {
				t.Fatal("the changes since the start are listed complete beyond the history kept")
			}
			latest := sub.Latest()
			if changes, complete := sub.Since(latest.Index - 1); !complete || len(changes) != 1 || changes[0] != latest {
				t.Fatalf("since the entry before the latest: %d changes, complete %v", len(changes), complete)
			}
			must(w, &fsm.CancelVideo{VideoID: "watched", AccountID: "a", Now: t0})
			if l := sub.Latest(); !l.Final() || l.Video.Status != fsm.StatusCanceled || l.Index != w.f.AppliedIndex() {
				t.Fatalf("after its cancel: %s at %d, final %v", l.Video.Status, l.Index, l.Final())
			}
			// A second subscriber of a followed video starts from its latest
			// change; one of a video no longer followed from the current index.
			again, _ := w.f.Follow("a", "watched")
			if again.Latest() != sub.Latest() {
				t.Fatal("a second subscriber does not share the followed video")
			}
			again.Close()
			sub.Close()
			w.video("later", "a", 1)
			fresh, _ := w.f.Follow("a", "watched")
			defer fresh.Close()
			if l := fresh.Latest(); l.Index != w.f.AppliedIndex() || l.Video.Status != fsm.StatusCanceled {
				t.Fatalf("following it again: %s at %d, want canceled at %d", l.Video.Status, l.Index, w.f.AppliedIndex())
			}
		})
	}
}
