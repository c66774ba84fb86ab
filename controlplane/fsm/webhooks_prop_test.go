package fsm_test

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// webhookCommand draws a webhook command for the snapshot property tests: new
// endpoints (some refused), deletions, videos of their accounts failing (events),
// attempts on those deliveries, retries, test events, secret rotations,
// disabling and enabling, and prunes.
func (g *cmdGen) webhookCommand(t *rapid.T) fsm.Command {
	// hooked draws an endpoint and one video of its account, when there are.
	hooked := func() (whk, video string) {
		if len(g.webhooks) == 0 {
			return "missing_whk", "missing_vid"
		}
		w := rapid.SampledFrom(g.webhooks).Draw(t, "whk")
		var vids []string
		for _, v := range g.videos {
			if g.videoAcct[v] == w[1] {
				vids = append(vids, v)
			}
		}
		return w[0], pick(t, vids, "vid_of_whk")
	}
	switch rapid.IntRange(0, 13).Draw(t, "webhook_kind") {
	case 11, 12, 13:
		return g.eventLogCommand(t)
	case 0, 1:
		id := g.id("whk")
		acct := pick(t, g.accounts, "acct")
		if len(g.videos) > 0 && rapid.Bool().Draw(t, "acct_with_videos") {
			acct = g.videoAcct[rapid.SampledFrom(g.videos).Draw(t, "vid_of_acct")]
		}
		g.webhooks = append(g.webhooks, [2]string{id, acct})
		events := rapid.SliceOfNDistinct(rapid.SampledFrom([]string{fsm.EventVideoCompleted, fsm.EventVideoFailed, fsm.EventWebhookDisabled, "video.bogus"}),
			0, 3, rapid.ID[string]).Draw(t, "events")
		return &fsm.CreateWebhook{WebhookID: id, AccountID: acct, URL: "https://h.example/" + id,
			Events: events, Secret: "whsec_" + id, Now: g.now}
	case 2:
		w, _ := hooked()
		return &fsm.DeleteWebhook{WebhookID: w, AccountID: pick(t, g.accounts, "acct"), Now: g.now}
	case 3:
		_, v := hooked()
		return &fsm.FailVideo{VideoID: v, Reason: "r", Now: g.now}
	case 4, 5:
		w, v := hooked()
		ev := fsm.EventID(v)
		if len(g.testEvents) > 0 && rapid.Bool().Draw(t, "attempt_test_event") {
			ev = rapid.SampledFrom(g.testEvents).Draw(t, "test_event")
		}
		status := rapid.SampledFrom([]int{0, 200, 204, 302, 500}).Draw(t, "status")
		switch {
		case status >= 200 && status < 300:
			delete(g.failingSince, w)
		case g.failingSince[w] == 0:
			g.failingSince[w] = g.now
		}
		return &fsm.RecordDelivery{EventID: ev, WebhookID: w, At: g.now, Status: status, LatencyMS: 5}
	case 6:
		w, v := hooked()
		return &fsm.RetryDelivery{AccountID: pick(t, g.accounts, "acct"), WebhookID: w,
			DeliveryID: fsm.EventID(v) + "." + w, Now: g.now}
	case 7:
		w, _ := hooked()
		ev := g.id("evt")
		g.testEvents = append(g.testEvents, ev)
		return &fsm.SendTestEvent{AccountID: pick(t, g.accounts, "acct"), WebhookID: w, EventID: ev, Now: g.now}
	case 8:
		w, _ := hooked()
		return &fsm.RotateWebhookSecret{AccountID: pick(t, g.accounts, "acct"), WebhookID: w, Secret: g.id("whsec"),
			Until: g.now + rapid.Int64Range(-1, 3).Draw(t, "overlap_s")*1e9, Now: g.now}
	case 9:
		w, _ := hooked()
		return &fsm.DisableWebhook{WebhookID: w, FailingSince: g.failingSince[w], EventID: g.id("evt"),
			MinFailing: rapid.Int64Range(1, 3e9).Draw(t, "min_failing"), Now: g.now}
	case 10:
		w, _ := hooked()
		return &fsm.EnableWebhook{AccountID: pick(t, g.accounts, "acct"), WebhookID: w, Now: g.now}
	}
	return &fsm.PruneDeliveries{Before: g.now - rapid.Int64Range(0, 8*24*3600*1e9).Draw(t, "retention")}
}

// sameWebhookReads compares the webhook reads of a and b (see sameReads).
func sameWebhookReads(same func(what string, x, y any), g *cmdGen, a, b *fsm.FSM) {
	for _, id := range g.accounts {
		same("webhooks of "+id, a.Webhooks(id), b.Webhooks(id))
	}
	same("deliveries", a.Deliveries(fsm.DeliveryFilter{}), b.Deliveries(fsm.DeliveryFilter{}))
	// One endpoint's, read from its index, is the full listing filtered.
	all := a.Deliveries(fsm.DeliveryFilter{})
	for _, w := range g.webhooks {
		for _, limit := range []int{0, 1, 3} {
			var want []fsm.Delivery
			for _, d := range all {
				if d.WebhookID == w[0] && (limit == 0 || len(want) < limit) {
					want = append(want, d)
				}
			}
			same(fmt.Sprintf("deliveries of %s, limit %d", w[0], limit), a.Deliveries(fsm.DeliveryFilter{WebhookID: w[0], Limit: limit}), want)
			same(fmt.Sprintf("deliveries of %s, limit %d (b)", w[0], limit), b.Deliveries(fsm.DeliveryFilter{WebhookID: w[0], Limit: limit}), want)
		}
	}
	same("due deliveries", a.DueDeliveries(g.now, 1000, fsm.DueOptions{}), b.DueDeliveries(g.now, 1000, fsm.DueOptions{}))
	na, oka := a.NextDeliveryAt(fsm.DueOptions{})
	nb, okb := b.NextDeliveryAt(fsm.DueOptions{})
	same("next delivery", []any{na, oka}, []any{nb, okb})
	same("pending deliveries", a.PendingDeliveries(), b.PendingDeliveries())
	// The index of pending deliveries by endpoint agrees with the listing.
	pending := 0
	for _, d := range all {
		if d.State == fsm.DeliveryPending {
			pending++
		}
	}
	same("pending deliveries, counted in the listing", a.PendingDeliveries(), pending)
	same("failing webhooks", a.FailingWebhooks(1), b.FailingWebhooks(1))
	for _, ev := range g.testEvents {
		ea, oka := a.Event(ev)
		eb, okb := b.Event(ev)
		same("test event "+ev, []any{ea, oka}, []any{eb, okb})
	}
}

// BenchmarkDueDeliveries reads the due batch out of an outbox of 10,000 pending
// deliveries (one endpoint down for a while), as the deliverer does each round.
func BenchmarkDueDeliveries(b *testing.B) {
	f := fsm.New()
	must := func(c fsm.Command) {
		if _, err := f.ApplyCommand(c); err != nil {
			b.Fatal(err)
		}
	}
	must(&fsm.CreateAccount{AccountID: "a", Plan: fsm.PlanPro, Credits: 1 << 40, KeyID: "k", Now: t0})
	must(createWebhook("whk_1", "a", fsm.EventTypes...))
	for i := range 10_000 {
		id := fmt.Sprintf("vid_%05d", i)
		must(&fsm.CreateVideo{VideoID: id, AccountID: "a", Price: 1, Spec: autoSpec("p", 5), Now: t0})
		must(&fsm.FailVideo{VideoID: id, Reason: "r", Now: t0 + int64(i)})
		must(&fsm.RecordDelivery{EventID: fsm.EventID(id), WebhookID: "whk_1", At: t0 + int64(i), Status: 503})
	}
	b.Run("one endpoint's backlog", func(b *testing.B) {
		for b.Loop() {
			if due := f.DueDeliveries(t0+int64(time.Hour), 8, fsm.DueOptions{}); len(due) != 8 {
				b.Fatalf("%d due", len(due))
			}
		}
	})
	// The deliverer's case while that endpoint hangs: its one slot is held,
	// and another account's event is due.
	must(&fsm.CreateAccount{AccountID: "b", Plan: fsm.PlanPro, Credits: 1 << 40, KeyID: "k2", Now: t0})
	must(createWebhook("whk_2", "b", fsm.EventTypes...))
	must(&fsm.CreateVideo{VideoID: "vid_b", AccountID: "b", Price: 1, Spec: autoSpec("p", 5), Now: t0})
	must(&fsm.FailVideo{VideoID: "vid_b", Reason: "r", Now: t0})
	opt := fsm.DueOptions{PerWebhook: 1, Busy: map[string]int{"whk_1": 1}, BusyAccounts: map[string]int{"a": 1}}
	b.Run("a held endpoint's backlog", func(b *testing.B) {
		for b.Loop() {
			if due := f.DueDeliveries(t0+int64(time.Hour), 8, opt); len(due) != 1 {
				b.Fatalf("%d due", len(due))
			}
		}
	})
}
