package fsm_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

func TestIdempotencyReplaysTheOriginal(t *testing.T) {
	// After the first create, each case changes the world, then retries with the
	// same key and body: the answer is the first answer, flagged as a replay.
	tests := []struct {
		name   string
		change func(w *world)
	}{
		{"immediately", func(w *world) {}},
		{"after the video started", func(w *world) {
			w.must(&fsm.FailVideo{VideoID: "v0", Now: t0 + 1})
			l, _ := w.lease("n1", t0+1)
			w.must(&fsm.TaskProgress{NodeID: "n1", TaskID: l.TaskID, Token: l.Token, Percent: 50, Now: t0 + 2})
		}},
		{"after the video completed", func(w *world) {
			w.must(&fsm.FailVideo{VideoID: "v0", Now: t0 + 1})
			w.finish("n1", "v1")
		}},
		{"after the video failed and was refunded", func(w *world) {
			w.must(&fsm.FailVideo{VideoID: "v1", Reason: "gpu fell over", Now: t0 + 3})
		}},
		{"after the queue ahead moved", func(w *world) { w.lease("n1", t0+1) }},
		{"after the balance ran out", func(w *world) {
			w.must(createVideo("v2", "acct", w.balance("acct"), "", "", t0+1))
		}},
		{"after the plan was downgraded", func(w *world) {
			w.must(&fsm.SetPlan{AccountID: "acct", Plan: fsm.PlanFree, Now: t0 + 1})
		}},
		{"one nanosecond before the record expires", func(w *world) {}},
	}
	for _, a := range appliers {
		for _, tc := range tests {
			t.Run(a.name+"/"+tc.name, func(t *testing.T) {
				w := newWorld(t, a)
				w.account("acct", fsm.PlanPro, 30)
				w.node("n1", 2, true)
				w.video("v0", "acct", 3) // ahead in the queue
				first := must(w, createVideo("v1", "acct", 9, "idem-1", `{"a":1}`, t0))
				if first.Replayed || first.QueuePosition != 2 {
					t.Fatalf("first create %+v", first)
				}
				tc.change(w)
				balance, videos := w.balance("acct"), w.f.Stats().Videos
				now := t0 + 10
				if tc.name == "one nanosecond before the record expires" {
					now = t0 + fsm.IdempotencyTTL - 1
				}
				out, err := w.apply(createVideo("v-retry", "acct", 9, "idem-1", `{"a":1}`, now))
				if err != nil {
					t.Fatalf("retry refused: %v", err)
				}
				again := out.(fsm.CreateVideoResult)
				if !again.Replayed {
					t.Fatal("retry not flagged as a replay")
				}
				again.Replayed = false
				if !reflect.DeepEqual(again, first) {
					t.Fatalf("replay\n%+v\nwant the original\n%+v", again, first)
				}
				if w.balance("acct") != balance || w.f.Stats().Videos != videos {
					t.Fatalf("replay charged or created: balance %d (was %d), videos %d (was %d)", w.balance("acct"), balance, w.f.Stats().Videos, videos)
				}
				if _, ok := w.f.Video("acct", "v-retry"); ok {
					t.Fatal("replay recorded the retry's video id")
				}
			})
		}
	}
}

func TestIdempotencyRules(t *testing.T) {
	for _, a := range appliers {
		t.Run(a.name+"/different body is a duplicate naming the existing video", func(t *testing.T) {
			w := newWorld(t, a)
			w.account("acct", fsm.PlanPro, 30)
			w.must(createVideo("v1", "acct", 9, "k", "body-1", t0))
			_, err := w.apply(createVideo("v2", "acct", 9, "k", "body-2", t0+1))
			var dup *fsm.DuplicateRequestError
			if !errors.As(err, &dup) || dup.ExistingVideoID != "v1" || !errors.Is(err, fsm.ErrDuplicateRequest) {
				t.Fatalf("got %#v, want DuplicateRequestError{v1}", err)
			}
			if w.balance("acct") != 21 || w.f.Stats().Videos != 1 {
				t.Fatalf("duplicate charged or created: balance %d, videos %d", w.balance("acct"), w.f.Stats().Videos)
			}
		})

		t.Run(a.name+"/a record 24 h old is treated as absent", func(t *testing.T) {
			w := newWorld(t, a)
			w.account("acct", fsm.PlanPro, 30)
			w.must(createVideo("v1", "acct", 9, "k", "body-1", t0))
			later := t0 + fsm.IdempotencyTTL
			res := must(w, createVideo("v2", "acct", 9, "k", "body-1", later))
			if res.Replayed || res.Video.ID != "v2" || w.balance("acct") != 12 {
				t.Fatalf("expired key: %+v, balance %d", res, w.balance("acct"))
			}
			// The key now remembers the new video, from its new time.
			again := must(w, createVideo("v3", "acct", 9, "k", "body-1", later+1))
			if !again.Replayed || again.Video.ID != "v2" {
				t.Fatalf("after re-use the key replays %+v", again)
			}
			// And another body under an expired record is no duplicate either.
			res = must(w, createVideo("v4", "acct", 3, "k", "body-2", later+fsm.IdempotencyTTL))
			if res.Replayed || res.Video.ID != "v4" {
				t.Fatalf("expired key with another body: %+v", res)
			}
		})

		t.Run(a.name+"/ExpireIdempotency removes old records only", func(t *testing.T) {
			w := newWorld(t, a)
			w.account("acct", fsm.PlanPro, 100)
			w.must(createVideo("v1", "acct", 1, "old", "b", t0))
			w.must(createVideo("v2", "acct", 1, "edge", "b", t0+100))
			w.must(createVideo("v3", "acct", 1, "new", "b", t0+200))
			n := w.must(&fsm.ExpireIdempotency{Before: t0 + 100})
			if n != 1 || w.f.Stats().Idempotency != 2 {
				t.Fatalf("expired %v, %d left; want 1 expired, 2 left", n, w.f.Stats().Idempotency)
			}
			res := must(w, createVideo("v4", "acct", 1, "old", "b", t0+300))
			if res.Replayed || res.Video.ID != "v4" {
				t.Fatalf("expired key still replays: %+v", res)
			}
			res = must(w, createVideo("v5", "acct", 1, "edge", "b", t0+300))
			if !res.Replayed || res.Video.ID != "v2" {
				t.Fatalf("record at the boundary was removed: %+v", res)
			}
			if n := w.must(&fsm.ExpireIdempotency{Before: t0}); n != 0 {
				t.Fatalf("expired %v with nothing old", n)
			}
		})

		t.Run(a.name+"/keys are scoped per account", func(t *testing.T) {
			w := newWorld(t, a)
			w.account("a", fsm.PlanPro, 10)
			w.account("b", fsm.PlanPro, 10)
			ra := must(w, createVideo("va", "a", 3, "same", "body-a", t0))
			rb := must(w, createVideo("vb", "b", 3, "same", "body-b", t0))
			if ra.Replayed || rb.Replayed || rb.Video.ID != "vb" || w.balance("a") != 7 || w.balance("b") != 7 {
				t.Fatalf("a %+v, b %+v", ra, rb)
			}
		})

		t.Run(a.name+"/no key, no record", func(t *testing.T) {
			w := newWorld(t, a)
			w.account("a", fsm.PlanPro, 10)
			w.must(createVideo("v1", "a", 3, "", "b", t0))
			w.must(createVideo("v2", "a", 3, "", "b", t0))
			if st := w.f.Stats(); st.Idempotency != 0 || st.Videos != 2 || w.balance("a") != 4 {
				t.Fatalf("stats %+v balance %d", st, w.balance("a"))
			}
		})

		t.Run(a.name+"/a refused create leaves no record", func(t *testing.T) {
			w := newWorld(t, a)
			w.account("a", fsm.PlanPro, 2)
			if _, err := w.apply(createVideo("v1", "a", 3, "k", "b", t0)); !errors.Is(err, fsm.ErrInsufficientCredits) {
				t.Fatalf("got %v", err)
			}
			if w.f.Stats().Idempotency != 0 {
				t.Fatal("refusal recorded the key")
			}
			w.must(&fsm.GrantCredits{AccountID: "a", Amount: 1, Now: t0})
			res := must(w, createVideo("v2", "a", 3, "k", "b", t0+1))
			if res.Replayed || res.Video.ID != "v2" || w.balance("a") != 0 {
				t.Fatalf("retry after top-up %+v balance %d", res, w.balance("a"))
			}
		})

		t.Run(a.name+"/a free preview replays, the free limit still holds", func(t *testing.T) {
			w := newWorld(t, a)
			w.account("f", fsm.PlanFree, 0)
			first := must(w, createVideo("p1", "f", 9, "k", "b", t0))
			again := must(w, createVideo("p2", "f", 9, "k", "b", t0+1))
			if !again.Replayed || again.Video.ID != "p1" || again.Video.Status != fsm.StatusPreview {
				t.Fatalf("preview replay %+v (first %+v)", again, first)
			}
			if _, err := w.apply(createVideo("p3", "f", 9, "other", "b", t0+2)); !errors.Is(err, fsm.ErrFreeLimitReached) {
				t.Fatalf("second project under a new key: %v", err)
			}
		})
	}
}
