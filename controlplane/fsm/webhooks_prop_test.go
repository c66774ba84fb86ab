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
// attempts on those deliveries and prunes.
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
	switch rapid.IntRange(0, 9).Draw(t, "webhook_kind") {
	case 7, 8, 9:
		return g.eventLogCommand(t)
	case 0, 1:
		id := g.id("whk")
		acct := pick(t, g.accounts, "acct")
		if len(g.videos) > 0 && rapid.Bool().Draw(t, "acct_with_videos") {
			acct = g.videoAcct[rapid.SampledFrom(g.videos).Draw(t, "vid_of_acct")]
		}
		g.webhooks = append(g.webhooks, [2]string{id, acct})
		events := rapid.SliceOfNDistinct(rapid.SampledFrom([]string{fsm.EventVideoCompleted, fsm.EventVideoFailed, "video.bogus"}),
			0, 2, rapid.ID[string]).Draw(t, "events")
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
		return &fsm.RecordDelivery{EventID: fsm.EventID(v), WebhookID: w,
			At: g.now, Status: rapid.SampledFrom([]int{0, 200, 204, 302, 500}).Draw(t, "status"), LatencyMS: 5}
	}
	return &fsm.PruneDeliveries{Before: g.now - rapid.Int64Range(0, 8*24*3600*1e9).Draw(t, "retention")}
}

// sameWebhookReads compares the webhook reads of a and b (see sameReads).
func sameWebhookReads(same func(what string, x, y any), g *cmdGen, a, b *fsm.FSM) {
	for _, id := range g.accounts {
		same("webhooks of "+id, a.Webhooks(id), b.Webhooks(id))
	}
	same("deliveries", a.Deliveries(fsm.DeliveryFilter{}), b.Deliveries(fsm.DeliveryFilter{}))
	same("due deliveries", a.DueDeliveries(g.now, 1000), b.DueDeliveries(g.now, 1000))
	na, oka := a.NextDeliveryAt()
	nb, okb := b.NextDeliveryAt()
	same("next delivery", []any{na, oka}, []any{nb, okb})
	same("pending deliveries", a.PendingDeliveries(), b.PendingDeliveries())
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
	b.ResetTimer()
	for b.Loop() {
		if due := f.DueDeliveries(t0+int64(time.Hour), 8); len(due) != 8 {
			b.Fatalf("%d due", len(due))
		}
	}
}
