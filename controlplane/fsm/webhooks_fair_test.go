package fsm_test

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// fairFarm has two accounts with due deliveries: acct_1 to whk_a, whk_b and
// whk_c (four events each), acct_2 to whk_x (three events), every one of
// them waiting for its first attempt but evt_3.whk_b, whose attempt failed a
// moment ago: whk_b is failing, and that delivery is not due.
func fairFarm(t *testing.T) *farm {
	fm, _ := newFarm(t, 1000)
	fm.apply(&fsm.CreateAccount{AccountID: "acct_2", Name: "b", Plan: fsm.PlanPro, Credits: 1000, KeyID: "key_2", Now: fm.now})
	for _, w := range []string{"whk_a", "whk_b", "whk_c"} {
		fm.apply(createWebhook(w, "acct_1", fsm.EventTypes...))
	}
	fm.apply(createWebhook("whk_x", "acct_2", fsm.EventTypes...))
	for i := range 4 {
		terminals[1].run(fm, fmt.Sprintf("vid_%d", i))
	}
	for i := range 3 {
		id := fmt.Sprintf("vid_b%d", i)
		fm.apply(&fsm.CreateVideo{VideoID: id, AccountID: "acct_2", Price: 10, Now: fm.now, Spec: manualSpec("fox")})
		fm.apply(&fsm.FailVideo{VideoID: id, Reason: "cancelled by the operator", Now: fm.now})
	}
	fm.apply(&fsm.RecordDelivery{EventID: "evt_3", WebhookID: "whk_b", At: fm.now, Status: 500})
	return fm
}

func dueIDs(fm *farm, limit int, opt fsm.DueOptions) []string {
	var got []string
	for _, d := range fm.f.DueDeliveries(fm.now, limit, opt) {
		got = append(got, d.ID())
	}
	return got
}

func TestDueDeliveriesFairAcrossAccounts(t *testing.T) {
	fm := fairFarm(t)
	cases := []struct {
		name  string
		limit int
		opt   fsm.DueOptions
		want  []string
	}{
		// Served in turn: acct_1's earliest, then acct_2's, and so on; the
		// failing whk_b's after whk_a's and whk_c's.
		{"in turn", 5, fsm.DueOptions{}, []string{"evt_0.whk_a", "evt_b0.whk_x", "evt_0.whk_c", "evt_b1.whk_x", "evt_1.whk_a"}},
		{"one slot goes to the account with fewer in flight", 1,
			fsm.DueOptions{BusyAccounts: map[string]int{"acct_1": 4, "acct_2": 1}}, []string{"evt_b0.whk_x"}},
		{"a busy account waits until the other has as many", 4,
			fsm.DueOptions{BusyAccounts: map[string]int{"acct_1": 2}}, []string{"evt_b0.whk_x", "evt_b1.whk_x", "evt_0.whk_a", "evt_b2.whk_x"}},
		{"an account with nothing due leaves its turn", 6,
			fsm.DueOptions{PerWebhook: 1, Busy: map[string]int{"whk_x": 1}, BusyAccounts: map[string]int{"acct_2": 1}},
			[]string{"evt_0.whk_a", "evt_0.whk_c", "evt_0.whk_b"}},
		{"caps hold within the turns", 10, fsm.DueOptions{PerWebhook: 1},
			[]string{"evt_0.whk_a", "evt_b0.whk_x", "evt_0.whk_c", "evt_0.whk_b"}},
		{"a failing endpoint's deliveries come last", 12, fsm.DueOptions{BusyAccounts: map[string]int{"acct_2": 99}},
			[]string{"evt_0.whk_a", "evt_0.whk_c", "evt_1.whk_a", "evt_1.whk_c", "evt_2.whk_a", "evt_2.whk_c",
				"evt_3.whk_a", "evt_3.whk_c", "evt_0.whk_b", "evt_1.whk_b", "evt_2.whk_b", "evt_b0.whk_x"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for range 50 { // the scan meets the deliveries in a new order each time
				if got := dueIDs(fm, tc.limit, tc.opt); !slices.Equal(got, tc.want) {
					t.Fatalf("due %v, want %v", got, tc.want)
				}
			}
		})
	}
}

// TestDueDeliveriesFairReference holds DueDeliveries to the rule read plainly:
// each next delivery is, of those left that are not skipped and whose
// endpoint has room, one of the account with the fewest attempts (in flight
// and returned), to an endpoint that is not failing if there is one, the
// earliest due (ties by id) among them.
func TestDueDeliveriesFairReference(t *testing.T) {
	fm := fairFarm(t)
	all := fm.f.DueDeliveries(fm.now, 1000, fsm.DueOptions{})
	failing := map[string]bool{}
	for _, acct := range []string{"acct_1", "acct_2"} {
		for _, w := range fm.f.Webhooks(acct) {
			failing[w.ID] = w.FailingSince != 0
		}
	}
	if !failing["whk_b"] || failing["whk_a"] {
		t.Fatalf("failing endpoints %v, want whk_b only", failing)
	}
	slices.SortFunc(all, func(a, b fsm.DueDelivery) int {
		return cmp.Or(cmp.Compare(a.NextAt, b.NextAt), cmp.Compare(a.ID(), b.ID()))
	})
	if len(all) != 14 {
		t.Fatalf("%d due, want 14", len(all))
	}
	// rank: the fewest served, then not failing, then earliest (all's order).
	rank := func(d fsm.DueDelivery, served map[string]int, opt fsm.DueOptions) int {
		n := opt.BusyAccounts[d.AccountID] + served[d.AccountID]
		if failing[d.WebhookID] {
			return 2*n + 1
		}
		return 2 * n
	}
	webhooks := []string{"whk_a", "whk_b", "whk_c", "whk_x"}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 1000 {
		opt := fsm.DueOptions{Skip: map[string]bool{}, PerWebhook: rng.IntN(4), Busy: map[string]int{},
			BusyAccounts: map[string]int{"acct_1": rng.IntN(4), "acct_2": rng.IntN(4)}}
		for _, d := range all {
			if rng.IntN(4) == 0 {
				opt.Skip[d.ID()] = true
			}
		}
		for _, w := range webhooks {
			opt.Busy[w] = rng.IntN(3)
		}
		limit := rng.IntN(17)
		var want []string
		taken, served, used := map[string]int{}, map[string]int{}, map[string]bool{}
		for len(want) < limit {
			best := -1
			for i, d := range all {
				room := opt.PerWebhook - opt.Busy[d.WebhookID] - taken[d.WebhookID]
				if used[d.ID()] || opt.Skip[d.ID()] || (opt.PerWebhook > 0 && room <= 0) {
					continue
				}
				if best < 0 || rank(d, served, opt) < rank(all[best], served, opt) {
					best = i // all is earliest first: the first of the lowest rank wins ties
				}
			}
			if best < 0 {
				break
			}
			d := all[best]
			want = append(want, d.ID())
			used[d.ID()] = true
			taken[d.WebhookID]++
			served[d.AccountID]++
		}
		if got := dueIDs(fm, limit, opt); !slices.Equal(got, want) {
			t.Fatalf("limit %d, options %+v: due %v, want %v", limit, opt, got, want)
		}
	}
}
