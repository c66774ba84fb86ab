package fsm_test

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

const day = int64(24 * time.Hour)

// hookWorld is account "a" with endpoints whk_1 (video events) and whk_2
// (every type, webhook.disabled included), and account "b" with whk_b.
func hookWorld(t *testing.T, ap applier) *world {
	w := newWorld(t, ap)
	w.account("a", fsm.PlanPro, 1000)
	w.account("b", fsm.PlanPro, 0)
	w.must(&fsm.StartEventLog{Now: t0})
	w.must(createWebhook("whk_1", "a", fsm.EventVideoCompleted, fsm.EventVideoFailed))
	w.must(createWebhook("whk_2", "a", fsm.EventTypes...))
	w.must(createWebhook("whk_b", "b", fsm.EventTypes...))
	return w
}

func hook(t *testing.T, w *world, account, id string) fsm.Webhook {
	t.Helper()
	for _, h := range w.f.Webhooks(account) {
		if h.ID == id {
			return h
		}
	}
	t.Fatalf("no webhook %s in %s", id, account)
	return fsm.Webhook{}
}

// fail records a failed attempt of a test event to whk at at.
func fail(w *world, whk string, at int64) {
	ev := "evt_fail" + strconv.FormatInt(at, 10)
	must(w, &fsm.SendTestEvent{AccountID: "a", WebhookID: whk, EventID: ev, Now: at})
	must(w, &fsm.RecordDelivery{EventID: ev, WebhookID: whk, At: at, Status: 500})
}

func TestSendTestEvent(t *testing.T) {
	cases := []struct {
		name    string
		cmd     fsm.SendTestEvent
		disable bool
		want    error
	}{
		{"queued", fsm.SendTestEvent{AccountID: "a", WebhookID: "whk_1", EventID: "evt_t1", Now: t0}, false, nil},
		{"another account's", fsm.SendTestEvent{AccountID: "b", WebhookID: "whk_1", EventID: "evt_t1", Now: t0}, false, fsm.ErrWebhookNotFound},
		{"unknown endpoint", fsm.SendTestEvent{AccountID: "a", WebhookID: "whk_9", EventID: "evt_t1", Now: t0}, false, fsm.ErrWebhookNotFound},
		{"no event id", fsm.SendTestEvent{AccountID: "a", WebhookID: "whk_1", Now: t0}, false, fsm.ErrInvalidCommand},
		{"disabled", fsm.SendTestEvent{AccountID: "a", WebhookID: "whk_1", EventID: "evt_t1", Now: t0 + 9*day}, true, fsm.ErrWebhookDisabled},
	}
	for _, ap := range appliers {
		for _, tc := range cases {
			t.Run(ap.name+"/"+tc.name, func(t *testing.T) {
				w := hookWorld(t, ap)
				if tc.disable {
					fail(w, "whk_1", t0)
					fail(w, "whk_1", t0+5*day)
					if !must(w, &fsm.DisableWebhook{WebhookID: "whk_1", FailingSince: t0, MinFailing: 5 * day, EventID: "evt_d", Now: t0 + 5*day}) {
						t.Fatal("not disabled")
					}
				}
				pending := w.f.PendingDeliveries()
				d, err := fsm.Do(t.Context(), w, &tc.cmd)
				wantErr(t, err, tc.want)
				if tc.want != nil {
					if got := w.f.PendingDeliveries(); got != pending {
						t.Fatalf("a refusal changed the pending deliveries: %d, was %d", got, pending)
					}
					return
				}
				if d.ID() != "evt_t1.whk_1" || d.State != fsm.DeliveryPending || d.NextAt != t0 {
					t.Fatalf("delivery %+v", d)
				}
				e, ok := w.f.Event("evt_t1")
				if !ok || e.Type != fsm.EventWebhookTest || e.Webhook == nil || e.Webhook.ID != "whk_1" || e.Webhook.Secret != "" {
					t.Fatalf("event %+v (found %v)", e, ok)
				}
				due := w.f.DueDeliveries(t0, 10, fsm.DueOptions{})
				if len(due) != 1 || due[0].WebhookID != "whk_1" || due[0].Secret != "whsec_whk_1" {
					t.Fatalf("due %+v: only the endpoint asked for gets a test event", due)
				}
				_, err = w.apply(&tc.cmd)
				wantErr(t, err, fsm.ErrInvalidCommand) // the same event id again
			})
		}
	}
}

func TestRotateWebhookSecret(t *testing.T) {
	cases := []struct {
		name      string
		rotations []fsm.RotateWebhookSecret
		at        int64 // when the deliverer reads
		secret    string
		old       string // "" when only one signs
		want      error
	}{
		{"overlap", []fsm.RotateWebhookSecret{{Secret: "whsec_new", Until: t0 + day, Now: t0}}, t0 + day - 1, "whsec_new", "whsec_whk_1", nil},
		{"after the overlap", []fsm.RotateWebhookSecret{{Secret: "whsec_new", Until: t0 + day, Now: t0}}, t0 + day, "whsec_new", "", nil},
		{"no overlap", []fsm.RotateWebhookSecret{{Secret: "whsec_new", Until: t0, Now: t0}}, t0, "whsec_new", "", nil},
		{"twice: the oldest stops", []fsm.RotateWebhookSecret{{Secret: "whsec_2nd", Until: t0 + day, Now: t0},
			{Secret: "whsec_3rd", Until: t0 + 2*day, Now: t0 + 1}}, t0 + 2, "whsec_3rd", "whsec_2nd", nil},
		{"no secret", []fsm.RotateWebhookSecret{{Until: t0 + day, Now: t0}}, t0, "whsec_whk_1", "", fsm.ErrInvalidCommand},
		{"another account's", []fsm.RotateWebhookSecret{{AccountID: "b", Secret: "whsec_new", Until: t0 + day, Now: t0}}, t0,
			"whsec_whk_1", "", fsm.ErrWebhookNotFound},
	}
	for _, ap := range appliers {
		for _, tc := range cases {
			t.Run(ap.name+"/"+tc.name, func(t *testing.T) {
				w := hookWorld(t, ap)
				var err error
				for _, r := range tc.rotations {
					if r.AccountID == "" {
						r.AccountID = "a"
					}
					r.WebhookID = "whk_1"
					_, err = w.apply(&r)
				}
				wantErr(t, err, tc.want)
				must(w, &fsm.SendTestEvent{AccountID: "a", WebhookID: "whk_1", EventID: "evt_t", Now: tc.at})
				due := w.f.DueDeliveries(tc.at, 10, fsm.DueOptions{})
				if len(due) != 1 || due[0].Secret != tc.secret || due[0].OldSecret != tc.old {
					t.Fatalf("due %+v, want secret %q and old %q", due, tc.secret, tc.old)
				}
			})
		}
	}
}

// After the overlap, the next command that touches the endpoint forgets
// the old secret on every replica: the state no longer holds it.
func TestOldSecretForgottenOnApply(t *testing.T) {
	w := hookWorld(t, appliers[1])
	must(w, &fsm.RotateWebhookSecret{AccountID: "a", WebhookID: "whk_1", Secret: "whsec_new", Until: t0 + day, Now: t0})
	if h := hook(t, w, "a", "whk_1"); h.OldSecret != "whsec_whk_1" || h.OldSecretUntil != t0+day {
		t.Fatalf("after rotation %+v", h)
	}
	must(w, &fsm.SendTestEvent{AccountID: "a", WebhookID: "whk_1", EventID: "evt_1", Now: t0 + day - 1})
	must(w, &fsm.RecordDelivery{EventID: "evt_1", WebhookID: "whk_1", At: t0 + day - 1, Status: 200})
	if h := hook(t, w, "a", "whk_1"); h.OldSecret == "" {
		t.Fatal("forgotten inside the overlap")
	}
	must(w, &fsm.SendTestEvent{AccountID: "a", WebhookID: "whk_1", EventID: "evt_2", Now: t0 + day})
	if h := hook(t, w, "a", "whk_1"); h.OldSecret != "" || h.OldSecretUntil != 0 {
		t.Fatalf("old secret kept after the overlap: %+v", h)
	}
}

func TestDisableWebhook(t *testing.T) {
	type attempt struct {
		at int64
		ok bool
	}
	cases := []struct {
		name     string
		attempts []attempt
		since    int64 // FailingSince of the command; -1: the endpoint's
		want     bool
	}{
		{"failing 5 days", []attempt{{t0, false}, {t0 + 2*day, false}, {t0 + 5*day, false}}, -1, true},
		{"failing 4 days", []attempt{{t0, false}, {t0 + 4*day, false}}, -1, false},
		{"a success inside", []attempt{{t0, false}, {t0 + 3*day, true}, {t0 + 5*day, false}}, t0, false},
		{"success since the leader looked", []attempt{{t0, false}, {t0 + 5*day, false}, {t0 + 5*day + 1, true}}, t0, false},
		{"a later run", []attempt{{t0, false}, {t0 + day, true}, {t0 + 2*day, false}, {t0 + 7*day, false}}, -1, true},
		{"a later run than the leader saw", []attempt{{t0, false}, {t0 + day, true}, {t0 + 2*day, false}, {t0 + 7*day, false}}, t0, false},
		{"never failed", []attempt{{t0, true}}, 0, false},
	}
	for _, ap := range appliers {
		for _, tc := range cases {
			t.Run(ap.name+"/"+tc.name, func(t *testing.T) {
				w := hookWorld(t, ap)
				for i, a := range tc.attempts {
					ev := "evt_" + string(rune('a'+i))
					must(w, &fsm.SendTestEvent{AccountID: "a", WebhookID: "whk_1", EventID: ev, Now: a.at})
					status := 503
					if a.ok {
						status = 204
					}
					must(w, &fsm.RecordDelivery{EventID: ev, WebhookID: "whk_1", At: a.at, Status: status})
				}
				since := tc.since
				if since < 0 {
					since = hook(t, w, "a", "whk_1").FailingSince
				}
				now := t0 + 8*day
				got := must(w, &fsm.DisableWebhook{WebhookID: "whk_1", FailingSince: since, MinFailing: 5 * day, EventID: "evt_dis", Now: now})
				h := hook(t, w, "a", "whk_1")
				if got != tc.want || h.Disabled() != tc.want {
					t.Fatalf("disabled %v (%+v), want %v", got, h, tc.want)
				}
				_, evWritten := w.f.Event("evt_dis")
				if evWritten != tc.want {
					t.Fatalf("webhook.disabled event written %v, want %v", evWritten, tc.want)
				}
				if !tc.want {
					return
				}
				if h.DisabledAt != now {
					t.Fatalf("disabled at %d, want %d", h.DisabledAt, now)
				}
				// webhook.disabled reaches the account's other endpoint that
				// subscribes to it, and no one else.
				ds := w.f.Deliveries(fsm.DeliveryFilter{EventID: "evt_dis"})
				if len(ds) != 1 || ds[0].WebhookID != "whk_2" {
					t.Fatalf("webhook.disabled deliveries %+v, want one to whk_2", ds)
				}
				// The account's event log has it (with the endpoint), and
				// none of the test events.
				page, err := w.f.Events(fsm.EventQuery{AccountID: "a", Limit: 100})
				if err != nil || len(page.Events) != 1 || page.Events[0].ID != "evt_dis" || page.Events[0].Type != fsm.EventWebhookDisabled ||
					page.Events[0].Webhook == nil || page.Events[0].Webhook.ID != "whk_1" {
					t.Fatalf("event log %+v (%v), want only the webhook.disabled event of whk_1", page.Events, err)
				}
				// Again: a no-op.
				if must(w, &fsm.DisableWebhook{WebhookID: "whk_1", FailingSince: since, MinFailing: 5 * day, EventID: "evt_dis2", Now: now}) {
					t.Fatal("disabled twice")
				}
			})
		}
	}
}

// A disabled endpoint is sent nothing: its pending deliveries wait (not
// due, not counted in the next wake-up), new events skip it, retries and
// tests are refused; enabling it resumes the waiting deliveries.
func TestDisabledEndpointWaitsUntilEnabled(t *testing.T) {
	w := hookWorld(t, appliers[1])
	w.video("vid_1", "a", 10)
	w.must(&fsm.FailVideo{VideoID: "vid_1", Reason: "r", Now: t0})
	must(w, &fsm.RecordDelivery{EventID: fsm.EventID("vid_1"), WebhookID: "whk_1", At: t0, Status: 500})
	must(w, &fsm.RecordDelivery{EventID: fsm.EventID("vid_1"), WebhookID: "whk_2", At: t0, Status: 200})
	fail(w, "whk_1", t0+5*day)
	must(w, &fsm.DisableWebhook{WebhookID: "whk_1", FailingSince: t0, MinFailing: 5 * day, EventID: "evt_dis", Now: t0 + 5*day})

	later := t0 + 6*day
	for _, d := range w.f.DueDeliveries(later, 100, fsm.DueOptions{}) {
		if d.WebhookID == "whk_1" {
			t.Fatalf("delivery %s to a disabled endpoint is due", d.ID())
		}
	}
	waiting := w.f.Deliveries(fsm.DeliveryFilter{WebhookID: "whk_1", State: fsm.DeliveryPending})
	if len(waiting) != 2 {
		t.Fatalf("pending deliveries of the disabled endpoint %+v, want 2 (they wait)", waiting)
	}
	w.video("vid_2", "a", 10)
	w.must(&fsm.FailVideo{VideoID: "vid_2", Reason: "r", Now: later})
	if ds := w.f.Deliveries(fsm.DeliveryFilter{EventID: fsm.EventID("vid_2")}); len(ds) != 1 || ds[0].WebhookID != "whk_2" {
		t.Fatalf("new event's deliveries %+v, want only whk_2's", ds)
	}
	_, err := w.apply(&fsm.RetryDelivery{AccountID: "a", WebhookID: "whk_2", DeliveryID: fsm.EventID("vid_1") + ".whk_2", Now: later})
	wantErr(t, err, nil) // the enabled one retries
	must(w, &fsm.RecordDelivery{EventID: "evt_dis", WebhookID: "whk_2", At: later, Status: 200})
	_, err = w.apply(&fsm.SendTestEvent{AccountID: "a", WebhookID: "whk_1", EventID: "evt_x", Now: later})
	wantErr(t, err, fsm.ErrWebhookDisabled)

	h := must(w, &fsm.EnableWebhook{AccountID: "a", WebhookID: "whk_1", Now: later})
	if h.Disabled() || h.FailingSince != 0 || h.DisabledAt != 0 {
		t.Fatalf("enabled %+v", h)
	}
	var ids []string
	for _, d := range w.f.DueDeliveries(later, 100, fsm.DueOptions{}) {
		if d.WebhookID == "whk_1" {
			ids = append(ids, d.ID())
		}
	}
	slices.Sort(ids)
	if len(ids) != 2 {
		t.Fatalf("due to whk_1 after enable: %v, want its 2 waiting deliveries", ids)
	}
	if again := must(w, &fsm.EnableWebhook{AccountID: "a", WebhookID: "whk_1", Now: later}); again.Disabled() {
		t.Fatal("enabling an enabled endpoint disabled it")
	}
	_, err = w.apply(&fsm.EnableWebhook{AccountID: "b", WebhookID: "whk_1", Now: later})
	wantErr(t, err, fsm.ErrWebhookNotFound)
}

// While a member records a level below DisableWebhook's, attempts do not
// count toward disabling: an older binary would not count them.
func TestFailuresCountOnlyOnceEveryMemberUnderstands(t *testing.T) {
	w := hookWorld(t, appliers[1])
	must(w, &fsm.SetMember{Member: fsm.Member{ID: "old", RaftAddr: "127.0.0.1:1", PublicURL: "http://127.0.0.1:2",
		AdminURL: "http://127.0.0.1:3", AgentURL: "http://127.0.0.1:4", Understands: fsm.RetryDeliveryType}})
	fail(w, "whk_1", t0)
	if h := hook(t, w, "a", "whk_1"); h.FailingSince != 0 {
		t.Fatalf("counted with an old member: %+v", h)
	}
	must(w, &fsm.SetMember{Member: fsm.Member{ID: "old", RaftAddr: "127.0.0.1:1", PublicURL: "http://127.0.0.1:2",
		AdminURL: "http://127.0.0.1:3", AgentURL: "http://127.0.0.1:4", Understands: fsm.EnableWebhookType}})
	fail(w, "whk_1", t0+1)
	if h := hook(t, w, "a", "whk_1"); h.FailingSince != t0+1 {
		t.Fatalf("not counted once every member understands: %+v", h)
	}
}

// TestActiveWebhookLimit: before ActiveWebhookLimit a disabled endpoint
// counts against the five, as it always did; from it on only enabled ones
// count, and enabling a disabled one is refused while five are enabled. The
// switch survives a snapshot.
func TestActiveWebhookLimit(t *testing.T) {
	for _, ap := range appliers {
		t.Run(ap.name, func(t *testing.T) {
			w := hookWorld(t, ap) // a has whk_1 and whk_2
			fail(w, "whk_1", t0)
			fail(w, "whk_1", t0+5*day)
			if !must(w, &fsm.DisableWebhook{WebhookID: "whk_1", FailingSince: t0, MinFailing: 5 * day, EventID: "evt_d", Now: t0 + 5*day}) {
				t.Fatal("not disabled")
			}
			for i := 3; i <= fsm.MaxWebhooksPerAccount; i++ {
				w.must(createWebhook(fmt.Sprintf("whk_%d", i), "a", fsm.EventTypes...))
			}
			_, err := w.apply(createWebhook("whk_6", "a", fsm.EventTypes...))
			wantErr(t, err, fsm.ErrWebhookLimitReached) // the disabled one still counts

			if !must(w, &fsm.ActiveWebhookLimit{Now: t0 + 6*day}) || !w.f.ActiveWebhookLimitOn() {
				t.Fatal("the limit did not switch")
			}
			if must(w, &fsm.ActiveWebhookLimit{Now: t0 + 6*day}) {
				t.Fatal("a second switch answered that it switched")
			}
			restored := fsm.New()
			if err := restored.Restore(io.NopCloser(bytes.NewReader(snapshotBytes(t, w.f)))); err != nil || !restored.ActiveWebhookLimitOn() {
				t.Fatalf("restored from a snapshot: %v, switched %v", err, restored.ActiveWebhookLimitOn())
			}
			w.must(createWebhook("whk_6", "a", fsm.EventTypes...)) // five enabled beside the disabled one
			_, err = w.apply(createWebhook("whk_7", "a", fsm.EventTypes...))
			wantErr(t, err, fsm.ErrWebhookLimitReached)
			_, err = w.apply(&fsm.EnableWebhook{AccountID: "a", WebhookID: "whk_1", Now: t0 + 6*day})
			wantErr(t, err, fsm.ErrWebhookLimitReached)
			if !hook(t, w, "a", "whk_1").Disabled() {
				t.Fatal("a refused enable enabled the endpoint")
			}
			w.must(&fsm.DeleteWebhook{WebhookID: "whk_6", AccountID: "a", Now: t0 + 6*day})
			if en := must(w, &fsm.EnableWebhook{AccountID: "a", WebhookID: "whk_1", Now: t0 + 6*day}); en.Disabled() {
				t.Fatal("enable with room left did not enable")
			}
			// Enabling an enabled endpoint answers it unchanged, even at the limit.
			must(w, &fsm.EnableWebhook{AccountID: "a", WebhookID: "whk_1", Now: t0 + 6*day})
		})
	}
}

// A disabled endpoint's waiting deliveries are abandoned once it has been
// disabled for the leader's keep, and only then, and only for the
// disablement the leader saw; the other endpoints' are untouched.
func TestAbandonDisabled(t *testing.T) {
	disabledAt := t0 + 5*day
	cases := []struct {
		name string
		cmd  fsm.AbandonDisabled
		want int
	}{
		{"abandoned", fsm.AbandonDisabled{WebhookID: "whk_1", DisabledAt: disabledAt, Before: disabledAt + 7*day, Now: disabledAt + 7*day}, 2},
		{"not disabled long enough", fsm.AbandonDisabled{WebhookID: "whk_1", DisabledAt: disabledAt, Before: disabledAt - 1, Now: disabledAt + 7*day}, 0},
		{"another disablement", fsm.AbandonDisabled{WebhookID: "whk_1", DisabledAt: disabledAt - 1, Before: disabledAt + 7*day, Now: disabledAt + 7*day}, 0},
		{"an enabled endpoint", fsm.AbandonDisabled{WebhookID: "whk_2", DisabledAt: 0, Before: disabledAt + 7*day, Now: disabledAt + 7*day}, 0},
		{"an unknown endpoint", fsm.AbandonDisabled{WebhookID: "whk_9", DisabledAt: disabledAt, Before: disabledAt + 7*day, Now: disabledAt + 7*day}, 0},
	}
	for _, ap := range appliers {
		for _, tc := range cases {
			t.Run(ap.name+"/"+tc.name, func(t *testing.T) {
				w := hookWorld(t, ap)
				fail(w, "whk_1", t0)
				fail(w, "whk_1", disabledAt)
				must(w, &fsm.SendTestEvent{AccountID: "a", WebhookID: "whk_2", EventID: "evt_other", Now: disabledAt})
				if !must(w, &fsm.DisableWebhook{WebhookID: "whk_1", FailingSince: t0, MinFailing: 5 * day, EventID: "evt_d", Now: disabledAt}) {
					t.Fatal("not disabled")
				}
				waiting := func(whk string) (pending, abandoned int) {
					for _, d := range w.f.Deliveries(fsm.DeliveryFilter{}) {
						switch {
						case d.WebhookID != whk:
						case d.State == fsm.DeliveryPending:
							pending++
						case d.State == fsm.DeliveryAbandoned && d.FinishedAt == tc.cmd.Now:
							abandoned++
						}
					}
					return
				}
				if p, _ := waiting("whk_1"); p != 2 {
					t.Fatalf("%d deliveries wait for the disabled endpoint, want 2", p)
				}
				if got := w.f.DisabledWaiting(disabledAt + 7*day); len(got) != 1 || got[0].ID != "whk_1" {
					t.Fatalf("DisabledWaiting %+v, want whk_1", got)
				}
				if got := must(w, &tc.cmd); got != tc.want {
					t.Fatalf("abandoned %d, want %d", got, tc.want)
				}
				p1, a1 := waiting("whk_1")
				p2, _ := waiting("whk_2")
				if p1 != 2-tc.want || a1 != tc.want || p2 == 0 || w.f.PendingDeliveries() != p1+p2 {
					t.Fatalf("whk_1: %d pending, %d abandoned; whk_2: %d pending; %d pending in all", p1, a1, p2, w.f.PendingDeliveries())
				}
				if tc.want > 0 {
					if got := w.f.DisabledWaiting(disabledAt + 7*day); len(got) != 0 {
						t.Fatalf("DisabledWaiting %+v after the abandon", got)
					}
					if again := must(w, &tc.cmd); again != 0 {
						t.Fatalf("again: abandoned %d", again)
					}
				}
			})
		}
	}
}
