package fsm_test

import (
	"errors"
	"reflect"
	"strconv"
	"testing"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

func TestCreateVideoCharges(t *testing.T) {
	type want struct {
		err      error
		status   string
		charged  int64
		balance  int64
		required int64 // of an InsufficientCreditsError
	}
	tests := []struct {
		name    string
		plan    string
		credits int64
		setup   func(w *world)
		cmd     *fsm.CreateVideo
		want    want
	}{
		{name: "pro charges exactly", plan: fsm.PlanPro, credits: 100, cmd: createVideo("v1", "acct", 9, "", "", t0),
			want: want{status: fsm.StatusQueued, charged: 9, balance: 91}},
		{name: "max charges exactly", plan: fsm.PlanMax, credits: 10, cmd: createVideo("v1", "acct", 3, "", "", t0),
			want: want{status: fsm.StatusQueued, charged: 3, balance: 7}},
		{name: "price equal to the balance", plan: fsm.PlanPro, credits: 30, cmd: createVideo("v1", "acct", 30, "", "", t0),
			want: want{status: fsm.StatusQueued, charged: 30, balance: 0}},
		{name: "zero price", plan: fsm.PlanPro, credits: 0, cmd: createVideo("v1", "acct", 0, "", "", t0),
			want: want{status: fsm.StatusQueued, charged: 0, balance: 0}},
		{name: "one credit short", plan: fsm.PlanPro, credits: 29, cmd: createVideo("v1", "acct", 30, "", "", t0),
			want: want{err: fsm.ErrInsufficientCredits, balance: 29, required: 30}},
		{name: "empty balance", plan: fsm.PlanMax, credits: 0, cmd: createVideo("v1", "acct", 3, "", "", t0),
			want: want{err: fsm.ErrInsufficientCredits, balance: 0, required: 3}},
		{name: "free account: preview, nothing charged even with credits", plan: fsm.PlanFree, credits: 50, cmd: createVideo("v1", "acct", 9, "", "", t0),
			want: want{status: fsm.StatusPreview, charged: 0, balance: 50}},
		{name: "free account: second project refused", plan: fsm.PlanFree, credits: 50,
			setup: func(w *world) { w.must(createVideo("v0", "acct", 9, "", "", t0)) },
			cmd:   createVideo("v1", "acct", 9, "", "", t0),
			want:  want{err: fsm.ErrFreeLimitReached, balance: 50}},
		{name: "downgraded account whose free project was used", plan: fsm.PlanFree, credits: 50,
			setup: func(w *world) {
				w.must(createVideo("v0", "acct", 9, "", "", t0))
				w.must(&fsm.SetPlan{AccountID: "acct", Plan: fsm.PlanPro, Now: t0})
				w.must(&fsm.SetPlan{AccountID: "acct", Plan: fsm.PlanFree, Now: t0})
			},
			cmd:  createVideo("v1", "acct", 9, "", "", t0),
			want: want{err: fsm.ErrFreeLimitReached, balance: 50}},
		{name: "negative price", plan: fsm.PlanPro, credits: 10, cmd: createVideo("v1", "acct", -5, "", "", t0),
			want: want{err: fsm.ErrInvalidCommand, balance: 10}},
		{name: "unknown account", plan: fsm.PlanPro, credits: 10, cmd: createVideo("v1", "nobody", 3, "", "", t0),
			want: want{err: fsm.ErrAccountNotFound, balance: 10}},
		{name: "folder of another account", plan: fsm.PlanPro, credits: 10,
			setup: func(w *world) {
				w.account("other", fsm.PlanPro, 0)
				w.must(&fsm.CreateFolder{FolderID: "fld_o", AccountID: "other", Name: "theirs", Now: t0})
			},
			cmd: func() *fsm.CreateVideo {
				c := createVideo("v1", "acct", 3, "", "", t0)
				c.Spec.FolderID = "fld_o"
				return c
			}(),
			want: want{err: fsm.ErrFolderNotFound, balance: 10}},
		{name: "own folder", plan: fsm.PlanPro, credits: 10,
			setup: func(w *world) { w.must(&fsm.CreateFolder{FolderID: "fld_m", AccountID: "acct", Name: "mine", Now: t0}) },
			cmd: func() *fsm.CreateVideo {
				c := createVideo("v1", "acct", 3, "", "", t0)
				c.Spec.FolderID = "fld_m"
				return c
			}(),
			want: want{status: fsm.StatusQueued, charged: 3, balance: 7}},
	}
	for _, a := range appliers {
		for _, tc := range tests {
			t.Run(a.name+"/"+tc.name, func(t *testing.T) {
				w := newWorld(t, a)
				w.account("acct", tc.plan, tc.credits)
				if tc.setup != nil {
					tc.setup(w)
				}
				videosBefore := w.f.Stats().Videos
				v, err := w.apply(tc.cmd)
				wantErr(t, err, tc.want.err)
				if got := w.balance("acct"); got != tc.want.balance {
					t.Fatalf("balance %d, want %d", got, tc.want.balance)
				}
				if tc.want.err != nil {
					if v != nil {
						t.Fatalf("refusal came with a value %#v", v)
					}
					if _, ok := w.f.Video("", tc.cmd.VideoID); ok {
						t.Fatal("refused create recorded a video")
					}
					if n := w.f.Stats().Videos; n != videosBefore {
						t.Fatalf("videos %d after a refusal, want %d", n, videosBefore)
					}
					if tc.want.required != 0 {
						var ins *fsm.InsufficientCreditsError
						if !errors.As(err, &ins) || ins.Required != tc.want.required || ins.Remaining != tc.want.balance {
							t.Fatalf("error %#v, want InsufficientCreditsError{%d, %d}", err, tc.want.required, tc.want.balance)
						}
					}
					return
				}
				res := v.(fsm.CreateVideoResult)
				if res.Replayed || res.Video.ID != tc.cmd.VideoID || res.Video.Status != tc.want.status ||
					res.Video.CreditsCharged != tc.want.charged || res.Video.Price != tc.cmd.Price || res.Video.AccountID != "acct" {
					t.Fatalf("result %+v", res)
				}
				stored := w.get("acct", tc.cmd.VideoID)
				if stored.Status != tc.want.status || stored.CreditsCharged != tc.want.charged || stored.CreatedAt != tc.cmd.Now {
					t.Fatalf("stored %+v", stored)
				}
				acct, _ := w.f.Account("acct")
				if tc.want.status == fsm.StatusPreview {
					if !acct.FreeVideoUsed || acct.PreviewVideoID != tc.cmd.VideoID || res.QueuePosition != 0 {
						t.Fatalf("preview: account %+v, queue position %d", acct, res.QueuePosition)
					}
				} else if res.QueuePosition == 0 {
					t.Fatal("a queued video has no queue position")
				}
			})
		}
	}
}

func TestRenderPreview(t *testing.T) {
	for _, a := range appliers {
		t.Run(a.name, func(t *testing.T) {
			w := newWorld(t, a)
			w.account("free", fsm.PlanFree, 0)
			w.account("pro", fsm.PlanPro, 100)
			w.account("other", fsm.PlanPro, 100)
			w.must(createVideo("prev", "free", 9, "", "", t0))
			w.video("paid", "pro", 3)

			tests := []struct {
				name string
				cmd  *fsm.RenderPreview
				err  error
			}{
				{"before the upgrade", &fsm.RenderPreview{VideoID: "prev", AccountID: "free", Now: t0}, fsm.ErrUpgradeRequired},
				{"another account's preview", &fsm.RenderPreview{VideoID: "prev", AccountID: "other", Now: t0}, fsm.ErrVideoNotFound},
				{"unknown video", &fsm.RenderPreview{VideoID: "nope", AccountID: "free", Now: t0}, fsm.ErrVideoNotFound},
				{"a normal video", &fsm.RenderPreview{VideoID: "paid", AccountID: "pro", Now: t0}, fsm.ErrNotPreview},
			}
			for _, tc := range tests {
				_, err := w.apply(tc.cmd)
				if !errors.Is(err, tc.err) {
					t.Fatalf("%s: got %v, want %v", tc.name, err, tc.err)
				}
			}
			if v := w.get("free", "prev"); v.Status != fsm.StatusPreview || v.RenderedFromPreview {
				t.Fatalf("refusals changed the preview: %+v", v)
			}

			w.must(&fsm.SetPlan{AccountID: "free", Plan: fsm.PlanPro, Now: t0})
			first := must(w, &fsm.RenderPreview{VideoID: "prev", AccountID: "free", Now: t0 + 10})
			if first.Status != fsm.StatusQueued || first.CreditsCharged != 0 || !first.RenderedFromPreview ||
				first.QueuePosition < 1 || first.UpdatedAt != t0+10 {
				t.Fatalf("rendered preview %+v", first)
			}
			if w.balance("free") != 0 {
				t.Fatalf("rendering the preview charged %d", -w.balance("free"))
			}
			again := must(w, &fsm.RenderPreview{VideoID: "prev", AccountID: "free", Now: t0 + 20})
			if !reflect.DeepEqual(again, first) {
				t.Fatalf("second render changed the video:\n%+v\nfirst\n%+v", again, first)
			}
			if st := w.f.Stats(); st.Queued != 2 {
				t.Fatalf("queued %d, want 2 (the paid video and the preview, once)", st.Queued)
			}
			// A rendered preview keeps answering idempotently after it started.
			w.must(&fsm.FailVideo{VideoID: "paid", Now: t0 + 25})
			w.node("n1", 1, false)
			if l, ok := w.lease("n1", t0+30); !ok || l.VideoID != "prev" {
				t.Fatalf("lease %+v %v, want the preview's first task", l, ok)
			}
			later := must(w, &fsm.RenderPreview{VideoID: "prev", AccountID: "free", Now: t0 + 40})
			if later.Status != fsm.StatusProcessing || later.QueuePosition != 0 {
				t.Fatalf("render after start: %+v", later)
			}
			// Failing a rendered preview refunds nothing: nothing was charged.
			w.must(&fsm.FailVideo{VideoID: "prev", Reason: "boom", Now: t0 + 50})
			if w.balance("free") != 0 {
				t.Fatalf("failing a free render credited %d", w.balance("free"))
			}
		})
	}
}

func TestFailVideoRefunds(t *testing.T) {
	tests := []struct {
		name  string
		setup func(w *world) // leaves video "v" (price 9) in some state
		err   error
	}{
		{name: "from queued", setup: func(w *world) {}},
		{name: "from processing", setup: func(w *world) {
			l, ok := w.lease("n1", t0)
			if !ok {
				w.t.Fatal("nothing to lease")
			}
			w.must(&fsm.TaskProgress{NodeID: "n1", TaskID: l.TaskID, Token: l.Token, Percent: 40, Now: t0})
		}},
		{name: "from completed", err: fsm.ErrInvalidTransition, setup: func(w *world) { w.finish("n1", "v") }},
		{name: "from failed: no second refund", err: fsm.ErrInvalidTransition, setup: func(w *world) {
			w.must(&fsm.FailVideo{VideoID: "v", Reason: "first", Now: t0})
		}},
	}
	for _, a := range appliers {
		for _, tc := range tests {
			t.Run(a.name+"/"+tc.name, func(t *testing.T) {
				w := newWorld(t, a)
				w.account("acct", fsm.PlanPro, 20)
				w.node("n1", 2, true)
				c := createVideo("v", "acct", 9, "", "", t0)
				c.Spec = manualSpec("a fox")
				w.must(c)
				tc.setup(w)
				before := w.balance("acct")
				statusBefore := w.get("acct", "v").Status
				out, err := w.apply(&fsm.FailVideo{VideoID: "v", Reason: "render crashed", Now: t0 + 99})
				wantErr(t, err, tc.err)
				if tc.err != nil {
					var te *fsm.TransitionError
					if !errors.As(err, &te) || te.From != statusBefore || te.To != fsm.StatusFailed {
						t.Fatalf("error %#v", err)
					}
					if w.balance("acct") != before || w.get("acct", "v").Status != statusBefore {
						t.Fatalf("refused fail changed state: balance %d (was %d)", w.balance("acct"), before)
					}
					return
				}
				if got := w.balance("acct"); got != before+9 || got != 20 {
					t.Fatalf("balance %d after refund, want 20", got)
				}
				v := out.(fsm.Video)
				stored := w.get("acct", "v")
				for _, got := range []fsm.Video{v, stored.Video} {
					if got.Status != fsm.StatusFailed || !got.CreditsRefunded || got.CreditsCharged != 9 ||
						got.ErrorMessage != "render crashed" || got.FinishedAt != t0+99 {
						t.Fatalf("failed video %+v", got)
					}
				}
				if stored.QueuePosition != 0 {
					t.Fatalf("failed video still in the queue at %d", stored.QueuePosition)
				}
				// Its tasks left the farm: nothing is handed out for it any more.
				for {
					l, ok := w.lease("n1", t0+100)
					if !ok {
						break
					}
					if l.VideoID == "v" {
						t.Fatalf("a task of the failed video was leased: %+v", l)
					}
				}
			})
		}
	}
}

func TestFailVideoRefusals(t *testing.T) {
	for _, a := range appliers {
		t.Run(a.name, func(t *testing.T) {
			w := newWorld(t, a)
			w.account("free", fsm.PlanFree, 0)
			w.must(createVideo("prev", "free", 9, "", "", t0))
			if _, err := w.apply(&fsm.FailVideo{VideoID: "prev", Now: t0}); !errors.Is(err, fsm.ErrInvalidTransition) {
				t.Fatalf("failing a preview: %v", err)
			}
			if _, err := w.apply(&fsm.FailVideo{VideoID: "nope", Now: t0}); !errors.Is(err, fsm.ErrVideoNotFound) {
				t.Fatalf("failing an unknown video: %v", err)
			}
			if w.balance("free") != 0 {
				t.Fatalf("balance %d", w.balance("free"))
			}
		})
	}
}

func TestVideoLifecycle(t *testing.T) {
	for _, a := range appliers {
		t.Run(a.name, func(t *testing.T) {
			w := newWorld(t, a)
			w.account("acct", fsm.PlanPro, 100)
			w.node("n1", 2, true)
			c := createVideo("v", "acct", 3, "", "", t0)
			c.Spec = manualSpec("a fox")
			w.must(c)

			render, ok := w.lease("n1", t0+1)
			if !ok || render.VideoID != "v" {
				t.Fatalf("lease %+v %v", render, ok)
			}
			if v := w.get("acct", "v"); v.Status != fsm.StatusProcessing || v.StartedAt != t0+1 || v.QueuePosition != 0 {
				t.Fatalf("after the first lease: %+v", v)
			}
			w.must(&fsm.TaskProgress{NodeID: "n1", TaskID: render.TaskID, Token: render.Token, Percent: 50, Now: t0 + 2})
			if v := w.get("acct", "v"); v.Percent <= 0 || v.Percent >= 100 {
				t.Fatalf("percent while rendering: %d", v.Percent)
			}
			// Reports with a stale token are refused and change nothing.
			if _, err := w.apply(&fsm.TaskProgress{NodeID: "n1", TaskID: render.TaskID, Token: render.Token + 99, Percent: 90, Now: t0 + 3}); err == nil {
				t.Fatal("progress with a wrong token was accepted")
			}
			w.complete(render, t0+4)
			fin, ok := w.lease("n1", t0+5)
			if !ok {
				t.Fatal("no finalize task after the render")
			}
			if _, ok := w.lease("n1", t0+5); ok {
				t.Fatal("a second task was handed out for a video with one left")
			}
			if out := w.complete(fin, t0+6); !out.VideoCompleted {
				t.Fatalf("finalize outcome %+v", out)
			}
			v := w.get("acct", "v")
			if v.Status != fsm.StatusCompleted || v.Percent != 100 || v.Outputs.Video != "videos/v/finalize/video.mp4" ||
				v.Spec.DurationSeconds != 6 || v.CreditsCharged != 3 {
				t.Fatalf("completed video %+v", v)
			}
			if _, err := w.apply(&fsm.FailVideo{VideoID: "v", Now: t0 + 9}); !errors.Is(err, fsm.ErrInvalidTransition) {
				t.Fatalf("failing a completed video: %v", err)
			}
			if w.balance("acct") != 97 {
				t.Fatalf("completion changed the balance to %d", w.balance("acct"))
			}
			if res := must(w, &fsm.LeaseTask{NodeID: "n1", LeaseMS: 1000, Now: t0 + 10}); res.Found || res.Why == "" {
				t.Fatalf("lease with no work: %+v", res)
			}
		})
	}
}

func TestQueuePositions(t *testing.T) {
	for _, a := range appliers {
		t.Run(a.name, func(t *testing.T) {
			w := newWorld(t, a)
			// One account, so fair share does not reorder: the queue is first come,
			// first served. It starts free, so its preview can be rendered later.
			w.account("a", fsm.PlanFree, 0)
			w.must(createVideo("prev", "a", 3, "", "", t0))
			w.must(&fsm.SetPlan{AccountID: "a", Plan: fsm.PlanPro, Now: t0})
			w.must(&fsm.GrantCredits{AccountID: "a", Amount: 1000, Now: t0})
			ids := []string{"v1", "v2", "v3", "v4", "v5"}
			for i, id := range ids {
				if res := w.video(id, "a", 3); res.QueuePosition != uint64(i+1) {
					t.Fatalf("%s created at position %d, want %d", id, res.QueuePosition, i+1)
				}
			}
			positions := func(want map[string]uint64) {
				t.Helper()
				for id, p := range want {
					if got := w.get("a", id).QueuePosition; got != p {
						t.Fatalf("%s at position %d, want %d (all: %v)", id, got, p, want)
					}
				}
			}
			positions(map[string]uint64{"v1": 1, "v2": 2, "v3": 3, "v4": 4, "v5": 5, "prev": 0})

			w.node("n1", 1, false) // one CPU slot: one plan at a time
			if l, ok := w.lease("n1", t0); !ok || l.VideoID != "v1" {
				t.Fatalf("first lease %+v %v, want v1", l, ok)
			}
			positions(map[string]uint64{"v1": 0, "v2": 1, "v3": 2, "v4": 3, "v5": 4})
			w.must(&fsm.FailVideo{VideoID: "v3", Now: t0})
			positions(map[string]uint64{"v1": 0, "v2": 1, "v3": 0, "v4": 2, "v5": 3})
			if res := w.video("v6", "a", 3); res.QueuePosition != 4 {
				t.Fatalf("new video at %d, want 4", res.QueuePosition)
			}
			if res := must(w, &fsm.RenderPreview{VideoID: "prev", AccountID: "a", Now: t0}); res.QueuePosition != 5 {
				t.Fatalf("rendered preview at %d, want 5", res.QueuePosition)
			}
			w.must(&fsm.FailVideo{VideoID: "v2", Now: t0}) // the head fails
			positions(map[string]uint64{"v2": 0, "v4": 1, "v5": 2, "v6": 3, "prev": 4})

			// ListVideos carries the same positions.
			page, err := w.f.ListVideos("a", fsm.VideoFilter{Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]uint64{}
			for _, v := range page.Videos {
				got[v.ID] = v.QueuePosition
			}
			if got["v4"] != 1 || got["prev"] != 4 || got["v2"] != 0 || got["v1"] != 0 {
				t.Fatalf("listing positions %v", got)
			}
		})
	}
}

func TestQueuePositionsMany(t *testing.T) {
	w := newWorld(t, appliers[0])
	w.account("a", fsm.PlanPro, 1<<40)
	const n = 500
	for i := range n {
		if res := w.video("v"+strconv.Itoa(i), "a", 1); res.QueuePosition != uint64(i+1) {
			t.Fatalf("video %d created at position %d", i, res.QueuePosition)
		}
	}
	w.node("n1", 100, false)
	for range 100 {
		if _, ok := w.lease("n1", t0); !ok {
			t.Fatal("lease refused with free slots")
		}
	}
	for i := range n {
		want := uint64(0)
		if i >= 100 {
			want = uint64(i - 99)
		}
		if got := w.get("a", "v"+strconv.Itoa(i)).QueuePosition; got != want {
			t.Fatalf("v%d at %d, want %d", i, got, want)
		}
	}
}

func TestListVideos(t *testing.T) {
	w := newWorld(t, appliers[0])
	w.account("a", fsm.PlanPro, 100)
	w.account("b", fsm.PlanPro, 100)
	w.must(&fsm.CreateFolder{FolderID: "fld", AccountID: "a", Name: "f", Now: t0})
	for _, id := range []string{"v1", "v2", "v3", "v4"} {
		c := createVideo(id, "a", 1, "", "", t0)
		if id == "v2" || id == "v4" {
			c.Spec.FolderID = "fld"
		}
		w.must(c)
	}
	w.video("b1", "b", 1)
	w.must(&fsm.FailVideo{VideoID: "v3", Now: t0})

	ids := func(p fsm.VideoPage) []string {
		var out []string
		for _, v := range p.Videos {
			out = append(out, v.ID)
		}
		return out
	}
	tests := []struct {
		name    string
		flt     fsm.VideoFilter
		ids     []string
		total   int
		hasMore bool
		err     error
	}{
		{"newest first", fsm.VideoFilter{Limit: 10}, []string{"v4", "v3", "v2", "v1"}, 4, false, nil},
		{"limit", fsm.VideoFilter{Limit: 2}, []string{"v4", "v3"}, 4, true, nil},
		{"status", fsm.VideoFilter{Status: fsm.StatusFailed, Limit: 10}, []string{"v3"}, 1, false, nil},
		{"folder", fsm.VideoFilter{FolderID: "fld", Limit: 10}, []string{"v4", "v2"}, 2, false, nil},
		{"starting after", fsm.VideoFilter{StartingAfter: "v3", Limit: 10}, []string{"v2", "v1"}, 4, false, nil},
		{"starting after, limited", fsm.VideoFilter{StartingAfter: "v4", Limit: 1}, []string{"v3"}, 4, true, nil},
		{"starting after another account's video", fsm.VideoFilter{StartingAfter: "b1", Limit: 10}, nil, 0, false, fsm.ErrVideoNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := w.f.ListVideos("a", tc.flt)
			wantErr(t, err, tc.err)
			if got := ids(p); !equalStrings(got, tc.ids) || p.Total != tc.total || p.HasMore != tc.hasMore {
				t.Fatalf("got %v total %d more %v, want %v total %d more %v", got, p.Total, p.HasMore, tc.ids, tc.total, tc.hasMore)
			}
		})
	}
	if _, ok := w.f.Video("b", "v1"); ok {
		t.Fatal("account b reads account a's video")
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestReadsReturnCopies(t *testing.T) {
	w := newWorld(t, appliers[0])
	w.account("a", fsm.PlanPro, 100)
	w.readyAsset("a", "as_1")
	c := createVideo("v", "a", 1, "", "", t0)
	c.Spec.FileAssetIDs = []string{"as_1"}
	w.must(c)
	c.Spec.FileAssetIDs[0] = "changed by the proposer"
	v := w.get("a", "v")
	if v.Spec.FileAssetIDs[0] != "as_1" {
		t.Fatal("the FSM kept the command's slice")
	}
	v.Spec.FileAssetIDs[0] = "changed by a reader"
	v.Status = "bogus"
	if again := w.get("a", "v"); again.Spec.FileAssetIDs[0] != "as_1" || again.Status != fsm.StatusQueued {
		t.Fatalf("a reader changed the state: %+v", again)
	}
}
