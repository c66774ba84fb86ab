package fsm_test

import (
	"testing"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// TestResealWebhook: the secret is replaced only while it is still the one
// the leader read; a deleted webhook is left alone.
func TestResealWebhook(t *testing.T) {
	for _, ap := range appliers {
		t.Run(ap.name, func(t *testing.T) {
			w := newWorld(t, ap)
			w.account("a", fsm.PlanPro, 0)
			for _, id := range []string{"whk_1", "whk_2"} {
				if _, err := w.apply(createWebhook(id, "a", fsm.EventTypes...)); err != nil {
					t.Fatal(err)
				}
			}
			steps := []struct {
				cmd  *fsm.ResealWebhook
				want bool
			}{
				{&fsm.ResealWebhook{WebhookID: "whk_1", Old: "whsec_whk_1", New: "sealed:v1:one", Now: t0}, true},
				{&fsm.ResealWebhook{WebhookID: "whk_1", Old: "whsec_whk_1", New: "sealed:v1:stale", Now: t0}, false}, // read before the first
				{&fsm.ResealWebhook{WebhookID: "whk_9", Old: "x", New: "sealed:v1:x", Now: t0}, false},
			}
			for i, s := range steps {
				got, err := w.apply(s.cmd)
				if err != nil || got != s.want {
					t.Fatalf("step %d: %v, %v; want %v", i, got, err, s.want)
				}
			}
			if _, err := w.apply(&fsm.ResealWebhook{WebhookID: "whk_2", Old: "whsec_whk_2", Now: t0}); err == nil {
				t.Fatal("a reseal to an empty secret was accepted")
			}
			got := w.f.StoredSecrets()
			want := []fsm.StoredSecret{{WebhookID: "whk_1", Secret: "sealed:v1:one"}, {WebhookID: "whk_2", Secret: "whsec_whk_2"}}
			if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
				t.Fatalf("stored secrets %v, want %v", got, want)
			}
		})
	}
}
