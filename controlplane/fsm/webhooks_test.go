package fsm_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

func createWebhook(id, account string, events ...string) *fsm.CreateWebhook {
	return &fsm.CreateWebhook{WebhookID: id, AccountID: account, URL: "https://hooks.example.com/" + id,
		Events: events, Secret: "whsec_" + id, Now: t0}
}

func TestCreateAndDeleteWebhook(t *testing.T) {
	both := fsm.EventTypes
	cases := []struct {
		name  string
		setup int // endpoints created first
		cmd   *fsm.CreateWebhook
		want  error
	}{
		{"first", 0, createWebhook("whk_new", "a", both...), nil},
		{"fifth", 4, createWebhook("whk_new", "a", fsm.EventVideoFailed), nil},
		{"sixth refused", 5, createWebhook("whk_new", "a", both...), fsm.ErrWebhookLimitReached},
		{"unknown account", 0, createWebhook("whk_new", "nobody", both...), fsm.ErrAccountNotFound},
		{"no events", 0, createWebhook("whk_new", "a"), fsm.ErrInvalidCommand},
		{"unknown event", 0, createWebhook("whk_new", "a", "video.started"), fsm.ErrInvalidCommand},
		{"repeated event", 0, createWebhook("whk_new", "a", fsm.EventVideoFailed, fsm.EventVideoFailed), fsm.ErrInvalidCommand},
		{"reused id", 1, createWebhook("whk_0", "a", both...), fsm.ErrInvalidCommand},
		{"no secret", 0, &fsm.CreateWebhook{WebhookID: "whk_new", AccountID: "a", URL: "https://x.example", Events: both}, fsm.ErrInvalidCommand},
	}
	for _, ap := range appliers {
		for _, tc := range cases {
			t.Run(ap.name+"/"+tc.name, func(t *testing.T) {
				w := newWorld(t, ap)
				w.account("a", fsm.PlanPro, 0)
				w.account("b", fsm.PlanPro, 0)
				for i := range tc.setup {
					w.must(createWebhook(fmt.Sprintf("whk_%d", i), "a", both...))
				}
				w.must(createWebhook("whk_other", "b", both...)) // another account's cap is its own
				_, err := w.apply(tc.cmd)
				wantErr(t, err, tc.want)
				n := tc.setup
				if tc.want == nil {
					n++
				}
				if got := len(w.f.Webhooks("a")); got != n {
					t.Fatalf("account has %d endpoints, want %d", got, n)
				}
			})
		}
	}
}

func TestDeleteWebhookFreesASlotAndIsScopedToItsAccount(t *testing.T) {
	w := newWorld(t, appliers[1])
	w.account("a", fsm.PlanPro, 0)
	w.account("b", fsm.PlanPro, 0)
	for i := range fsm.MaxWebhooksPerAccount {
		w.must(createWebhook(fmt.Sprintf("whk_%d", i), "a", fsm.EventTypes...))
	}
	_, err := w.apply(&fsm.DeleteWebhook{WebhookID: "whk_2", AccountID: "b", Now: t0})
	wantErr(t, err, fsm.ErrWebhookNotFound)
	w.must(&fsm.DeleteWebhook{WebhookID: "whk_2", AccountID: "a", Now: t0})
	_, err = w.apply(&fsm.DeleteWebhook{WebhookID: "whk_2", AccountID: "a", Now: t0})
	wantErr(t, err, fsm.ErrWebhookNotFound)
	w.must(createWebhook("whk_5", "a", fsm.EventTypes...))
	var got []string
	for _, h := range w.f.Webhooks("a") {
		got = append(got, h.ID)
	}
	if want := []string{"whk_0", "whk_1", "whk_3", "whk_4", "whk_5"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("endpoints %v, want %v", got, want)
	}
}

// terminal moves a fresh video of account a to completed or failed by one of the
// paths the farm has, and returns its id.
type terminal struct {
	name   string
	status string
	run    func(fm *farm, id string)
}

func manualVideo(fm *farm, id string) {
	fm.apply(&fsm.CreateVideo{VideoID: id, AccountID: "acct_1", Price: 10, Now: fm.now, Spec: manualSpec("fox")})
}

var terminals = []terminal{
	{"last CompleteTask", fsm.StatusCompleted, func(fm *farm, id string) {
		manualVideo(fm, id)
		fm.complete(fm.lease("node_1"), 0, "clip.mp4")
		fm.complete(fm.lease("node_1"), 0, "video.mp4")
	}},
	{"operator FailVideo", fsm.StatusFailed, func(fm *farm, id string) {
		manualVideo(fm, id)
		fm.apply(&fsm.FailVideo{VideoID: id, Reason: "cancelled by the operator", Now: fm.now})
	}},
	{"FailTask on the third node", fsm.StatusFailed, func(fm *farm, id string) {
		manualVideo(fm, id)
		onThreeNodes(fm, func(node string) {
			l := fm.lease(node)
			fm.apply(&fsm.FailTask{NodeID: node, TaskID: l.TaskID, Token: l.Token, Reason: "gpu fell off the bus", Now: fm.now})
		})
	}},
	{"ExpireLeases", fsm.StatusFailed, func(fm *farm, id string) {
		manualVideo(fm, id)
		onThreeNodes(fm, func(node string) {
			fm.lease(node)
			fm.now += int64(time.Hour)
			fm.apply(&fsm.ExpireLeases{Now: fm.now})
		})
	}},
}

// onThreeNodes runs lose on node_1 and on two more nodes it registers, one
// after the other: a task lost on three nodes fails its video.
func onThreeNodes(fm *farm, lose func(node string)) {
	for i := 1; i <= 3; i++ {
		node := fmt.Sprintf("node_%d", i)
		if i > 1 {
			fm.apply(&fsm.RegisterNode{NodeID: node, Name: node, CredHash: [32]byte{byte(i)}, Node: farmNode(), Now: fm.now})
		}
		lose(node)
	}
}

func TestTerminalTransitionWritesTheEvent(t *testing.T) {
	for _, tc := range terminals {
		t.Run(tc.name, func(t *testing.T) {
			fm, _ := newFarm(t, 1000)
			fm.apply(createWebhook("whk_both", "acct_1", fsm.EventTypes...))
			fm.apply(createWebhook("whk_failed", "acct_1", fsm.EventVideoFailed))
			fm.apply(createWebhook("whk_done", "acct_1", fsm.EventVideoCompleted))
			tc.run(fm, "vid_x")
			v, _ := fm.f.Video("acct_1", "vid_x")
			if v.Status != tc.status {
				t.Fatalf("video is %s, want %s", v.Status, tc.status)
			}
			ev, ok := fm.f.Event("evt_x")
			if !ok {
				t.Fatal("no evt_x written with the transition")
			}
			wantType, wantSubs := fsm.EventVideoCompleted, []string{"whk_both", "whk_done"}
			if tc.status == fsm.StatusFailed {
				wantType, wantSubs = fsm.EventVideoFailed, []string{"whk_both", "whk_failed"}
			}
			if ev.Type != wantType || ev.Video.Status != tc.status || ev.Created != v.FinishedAt || ev.AccountID != "acct_1" {
				t.Fatalf("event %+v for video %+v", ev, v.Video)
			}
			ds := fm.f.Deliveries(fsm.DeliveryFilter{EventID: ev.ID})
			var subs []string
			for _, d := range ds {
				subs = append(subs, d.WebhookID)
				if d.State != fsm.DeliveryPending || d.NextAt != ev.Created || len(d.Attempts) != 0 {
					t.Fatalf("new delivery %+v", d)
				}
			}
			if slices.Sort(subs); !reflect.DeepEqual(subs, wantSubs) {
				t.Fatalf("deliveries to %v, want %v", subs, wantSubs)
			}
			if due := fm.f.DueDeliveries(0, 10, fsm.DueOptions{}); len(due) != len(wantSubs) || due[0].Secret == "" || due[0].Event.ID != ev.ID {
				t.Fatalf("due deliveries: %+v", due)
			}
		})
	}
}

func TestNoSubscriberNoOutbox(t *testing.T) {
	fm, _ := newFarm(t, 1000)
	fm.apply(createWebhook("whk_failed", "acct_1", fsm.EventVideoFailed))
	terminals[0].run(fm, "vid_ok")
	if _, ok := fm.f.Event("evt_ok"); ok {
		t.Fatal("a completion with only a video.failed subscriber was written to the outbox")
	}
	if _, ok := fm.f.NextDeliveryAt(fsm.DueOptions{}); ok {
		t.Fatal("a delivery is pending")
	}
}

// failedDelivery sets up one event with one pending delivery to whk_1.
func failedDelivery(t *testing.T) *farm {
	fm, _ := newFarm(t, 1000)
	fm.apply(createWebhook("whk_1", "acct_1", fsm.EventTypes...))
	terminals[1].run(fm, "vid_x")
	return fm
}

func record(fm *farm, at int64, status int) (fsm.Delivery, error) {
	v, err := fm.f.ApplyCommand(&fsm.RecordDelivery{EventID: "evt_x", WebhookID: "whk_1", At: at, Status: status, LatencyMS: 12})
	d, _ := v.(fsm.Delivery)
	return d, err
}

func TestRecordDeliveryFollowsTheSchedule(t *testing.T) {
	fm := failedDelivery(t)
	at := fm.now
	for i, step := range fsm.RetrySchedule {
		d, err := record(fm, at, 503)
		if err != nil {
			t.Fatal(err)
		}
		if d.State != fsm.DeliveryPending || d.NextAt != at+int64(step) || len(d.Attempts) != i+1 {
			t.Fatalf("after attempt %d: %+v, want next at +%s", i+1, d, step)
		}
		if due := fm.f.DueDeliveries(d.NextAt-1, 10, fsm.DueOptions{}); len(due) != 0 {
			t.Fatalf("due before its time: %+v", due)
		}
		if next, _ := fm.f.NextDeliveryAt(fsm.DueOptions{}); next != d.NextAt {
			t.Fatalf("NextDeliveryAt %d, want %d", next, d.NextAt)
		}
		at = d.NextAt
	}
	d, err := record(fm, at, 0)
	if err != nil || d.State != fsm.DeliveryAbandoned || d.FinishedAt != at || len(d.Attempts) != 6 {
		t.Fatalf("sixth failure: %+v %v", d, err)
	}
	if _, err := record(fm, at+1, 200); err == nil {
		t.Fatal("an attempt after abandonment was recorded")
	}
	wantErr(t, func() error { _, err := record(fm, at+1, 200); return err }(), fsm.ErrDeliveryFinished)
}

func TestRecordDeliverySuccessAndDeletion(t *testing.T) {
	fm := failedDelivery(t)
	if d, err := record(fm, fm.now, 204); err != nil || d.State != fsm.DeliveryDelivered || d.NextAt != 0 {
		t.Fatalf("2xx: %+v %v", d, err)
	}
	wantErr(t, func() error { _, err := record(fm, fm.now, 200); return err }(), fsm.ErrDeliveryFinished)

	fm = failedDelivery(t)
	if _, err := record(fm, fm.now, 500); err != nil {
		t.Fatal(err)
	}
	fm.apply(&fsm.DeleteWebhook{WebhookID: "whk_1", AccountID: "acct_1", Now: fm.now})
	ds := fm.f.Deliveries(fsm.DeliveryFilter{WebhookID: "whk_1"})
	if len(ds) != 1 || ds[0].State != fsm.DeliveryCancelled || ds[0].URL == "" {
		t.Fatalf("after deleting the endpoint mid-retry: %+v", ds)
	}
	if due := fm.f.DueDeliveries(fm.now+int64(24*time.Hour), 10, fsm.DueOptions{}); len(due) != 0 {
		t.Fatalf("deleted endpoint still due: %+v", due)
	}
	wantErr(t, func() error { _, err := record(fm, fm.now, 200); return err }(), fsm.ErrDeliveryFinished)
}

func TestPruneDeliveries(t *testing.T) {
	fm := failedDelivery(t)
	fm.apply(createWebhook("whk_2", "acct_1", fsm.EventVideoFailed))
	terminals[1].run(fm, "vid_y") // evt_y: pending to whk_1 and whk_2
	done := fm.now
	if _, err := record(fm, done, 200); err != nil {
		t.Fatal(err)
	}
	if n := fm.apply(&fsm.PruneDeliveries{Before: done}); n != 0 {
		t.Fatalf("pruned %v finished at the cut-off", n)
	}
	if n := fm.apply(&fsm.PruneDeliveries{Before: done + 1}); n != 1 {
		t.Fatalf("pruned %v, want the one delivered", n)
	}
	if _, ok := fm.f.Event("evt_x"); ok {
		t.Fatal("evt_x kept with no delivery left")
	}
	if _, ok := fm.f.Event("evt_y"); !ok {
		t.Fatal("evt_y pruned while its deliveries are pending")
	}
	if got := len(fm.f.Deliveries(fsm.DeliveryFilter{})); got != 2 {
		t.Fatalf("%d deliveries left, want evt_y's 2", got)
	}
}

func TestWebhookSnapshotRoundTrip(t *testing.T) {
	fm := failedDelivery(t)
	fm.apply(createWebhook("whk_2", "acct_1", fsm.EventVideoFailed))
	terminals[1].run(fm, "vid_y")
	if _, err := record(fm, fm.now, 502); err != nil {
		t.Fatal(err)
	}
	b := snapshotBytes(t, fm.f)
	g := restored(t, b)
	if again := snapshotBytes(t, g); string(again) != string(b) {
		t.Fatal("a restored FSM snapshots to other bytes")
	}
	for _, read := range []func(f *fsm.FSM) any{
		func(f *fsm.FSM) any { return f.Webhooks("acct_1") },
		func(f *fsm.FSM) any { return f.Deliveries(fsm.DeliveryFilter{}) },
		func(f *fsm.FSM) any { return f.DueDeliveries(fm.now+int64(time.Hour), 10, fsm.DueOptions{}) },
		func(f *fsm.FSM) any { n, ok := f.NextDeliveryAt(fsm.DueOptions{}); return []any{n, ok} },
	} {
		if got, want := read(g), read(fm.f); !reflect.DeepEqual(got, want) {
			t.Fatalf("restored read differs:\n got %+v\nwant %+v", got, want)
		}
	}
	// The cap still holds after a restore: the index was rebuilt.
	for i := 3; i <= fsm.MaxWebhooksPerAccount; i++ {
		if _, err := g.ApplyCommand(createWebhook(fmt.Sprintf("whk_%d", i), "acct_1", fsm.EventTypes...)); err != nil {
			t.Fatal(err)
		}
	}
	_, err := g.ApplyCommand(createWebhook("whk_9", "acct_1", fsm.EventTypes...))
	wantErr(t, err, fsm.ErrWebhookLimitReached)
}

func TestDueDeliveriesEarliestFirst(t *testing.T) {
	fm, _ := newFarm(t, 1000)
	fm.apply(createWebhook("whk_1", "acct_1", fsm.EventTypes...))
	// Failed in order 0..5, then attempted in reverse, so due times run backwards.
	for i := range 6 {
		terminals[1].run(fm, fmt.Sprintf("vid_%d", i))
	}
	for i := range 6 {
		fm.apply(&fsm.RecordDelivery{EventID: fmt.Sprintf("evt_%d", 5-i), WebhookID: "whk_1", At: t0 + int64(i), Status: 500})
	}
	var got []string
	for _, d := range fm.f.DueDeliveries(t0+int64(time.Hour), 3, fsm.DueOptions{}) {
		got = append(got, d.EventID)
	}
	if want := []string{"evt_5", "evt_4", "evt_3"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("due %v, want %v", got, want)
	}
	if due := fm.f.DueDeliveries(t0+int64(time.Hour), 0, fsm.DueOptions{}); len(due) != 0 {
		t.Fatalf("limit 0 returned %d", len(due))
	}
}

func TestDueDeliveriesSkipAndCap(t *testing.T) {
	fm, _ := newFarm(t, 1000)
	for _, w := range []string{"whk_a", "whk_b", "whk_c"} {
		fm.apply(createWebhook(w, "acct_1", fsm.EventTypes...))
	}
	for i := range 4 {
		terminals[1].run(fm, fmt.Sprintf("vid_%d", i))
	}
	// Due in this order: evt_0.whk_a, evt_0.whk_b, evt_0.whk_c, evt_1.whk_a, ...
	cases := []struct {
		name      string
		limit     int
		opt       fsm.DueOptions
		want      []string
		nextFound bool // NextDeliveryAt with the same options finds one
	}{
		{"no options", 5, fsm.DueOptions{}, []string{"evt_0.whk_a", "evt_0.whk_b", "evt_0.whk_c", "evt_1.whk_a", "evt_1.whk_b"}, true},
		{"one per endpoint", 10, fsm.DueOptions{PerWebhook: 1}, []string{"evt_0.whk_a", "evt_0.whk_b", "evt_0.whk_c"}, true},
		{"two per endpoint", 10, fsm.DueOptions{PerWebhook: 2},
			[]string{"evt_0.whk_a", "evt_0.whk_b", "evt_0.whk_c", "evt_1.whk_a", "evt_1.whk_b", "evt_1.whk_c"}, true},
		{"cap under the limit", 2, fsm.DueOptions{PerWebhook: 1}, []string{"evt_0.whk_a", "evt_0.whk_b"}, true},
		{"busy counts against the cap", 10, fsm.DueOptions{PerWebhook: 2, Busy: map[string]int{"whk_a": 1}},
			[]string{"evt_0.whk_a", "evt_0.whk_b", "evt_0.whk_c", "evt_1.whk_b", "evt_1.whk_c"}, true},
		{"a full endpoint is left out", 10, fsm.DueOptions{PerWebhook: 2, Busy: map[string]int{"whk_a": 2}},
			[]string{"evt_0.whk_b", "evt_0.whk_c", "evt_1.whk_b", "evt_1.whk_c"}, true},
		{"busy without a cap changes nothing", 2, fsm.DueOptions{Busy: map[string]int{"whk_a": 5}}, []string{"evt_0.whk_a", "evt_0.whk_b"}, true},
		{"skipped ones are left out", 4, fsm.DueOptions{Skip: map[string]bool{"evt_0.whk_a": true, "evt_1.whk_b": true}},
			[]string{"evt_0.whk_b", "evt_0.whk_c", "evt_1.whk_a", "evt_1.whk_c"}, true},
		{"skip and cap together", 10, fsm.DueOptions{Skip: map[string]bool{"evt_0.whk_a": true, "evt_0.whk_b": true},
			PerWebhook: 2, Busy: map[string]int{"whk_a": 1, "whk_b": 1}}, []string{"evt_0.whk_c", "evt_1.whk_a", "evt_1.whk_b", "evt_1.whk_c"}, true},
		{"every endpoint full", 10, fsm.DueOptions{PerWebhook: 2, Busy: map[string]int{"whk_a": 2, "whk_b": 3, "whk_c": 2}}, nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// The scan reads a map: asked again, it meets the deliveries in
			// other orders, and the answer must not change.
			for range 50 {
				var got []string
				for _, d := range fm.f.DueDeliveries(fm.now, tc.limit, tc.opt) {
					got = append(got, d.ID())
				}
				if !slices.Equal(got, tc.want) {
					t.Fatalf("due %v, want %v", got, tc.want)
				}
			}
			next, found := fm.f.NextDeliveryAt(tc.opt)
			if found != tc.nextFound || (found && next != math.MinInt64) {
				t.Fatalf("next delivery at %d, %v; want found %v (due at once)", next, found, tc.nextFound)
			}
		})
	}
	// Any options: the answer is the earliest-first list of every due
	// delivery, read in order and kept while its endpoint has room.
	all := fm.f.DueDeliveries(fm.now, 1000, fsm.DueOptions{})
	rng := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		opt := fsm.DueOptions{Skip: map[string]bool{}, PerWebhook: rng.IntN(4), Busy: map[string]int{}}
		for _, d := range all {
			if rng.IntN(4) == 0 {
				opt.Skip[d.ID()] = true
			}
		}
		for _, w := range []string{"whk_a", "whk_b", "whk_c"} {
			opt.Busy[w] = rng.IntN(3)
		}
		limit := rng.IntN(14)
		var want []string
		taken := map[string]int{}
		for _, d := range all {
			room := opt.PerWebhook - opt.Busy[d.WebhookID] - taken[d.WebhookID]
			if len(want) < limit && !opt.Skip[d.ID()] && (opt.PerWebhook == 0 || room > 0) {
				want = append(want, d.ID())
				taken[d.WebhookID]++
			}
		}
		var got []string
		for _, d := range fm.f.DueDeliveries(fm.now, limit, opt) {
			got = append(got, d.ID())
		}
		if !slices.Equal(got, want) {
			t.Fatalf("limit %d, options %+v: due %v, want %v", limit, opt, got, want)
		}
	}
}
