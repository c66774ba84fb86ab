package webhook

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/controlplane/webhook/signature"
	"github.com/vidfarm/vidfarm/netguard"
)

// direct applies commands to the FSM without Raft: the rules under test are the
// engine's, and the FSM's own tests cover the log path.
type direct struct{ f *fsm.FSM }

func (d direct) Apply(_ context.Context, c fsm.Command) (any, error) { return d.f.ApplyCommand(c) }

// outbox returns an FSM holding one video.failed event due to url.
func outbox(t *testing.T, url string) *fsm.FSM {
	t.Helper()
	f := fsm.New()
	for _, c := range []fsm.Command{
		&fsm.CreateAccount{AccountID: "acct_1", Name: "a", Plan: fsm.PlanPro, Credits: 100, KeyID: "key_1", Now: 1},
		&fsm.CreateWebhook{WebhookID: "whk_1", AccountID: "acct_1", URL: url, Events: fsm.EventTypes, Secret: "whsec_t", Now: 1},
		&fsm.CreateVideo{VideoID: "vid_1", AccountID: "acct_1", Price: 10, Now: 2, Spec: fsm.Spec{Mode: fsm.ModeAuto, Prompt: "p", DurationSeconds: 5}},
		&fsm.FailVideo{VideoID: "vid_1", Reason: "operator", Now: 3},
	} {
		if _, err := f.ApplyCommand(c); err != nil {
			t.Fatalf("%s: %v", c.Type(), err)
		}
	}
	return f
}

func TestAttemptOutcomes(t *testing.T) {
	for _, tc := range []struct {
		name       string
		answer     func(w http.ResponseWriter, r *http.Request)
		state      string
		status     int
		errorMatch string
	}{
		{"2xx is done", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusAccepted) }, fsm.DeliveryDelivered, 202, ""},
		{"5xx is retried", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusBadGateway) }, fsm.DeliveryPending, 502, "answered 502"},
		{"a redirect is not followed", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/elsewhere", http.StatusTemporaryRedirect)
		}, fsm.DeliveryPending, 307, "redirects are not followed"},
		{"no answer in time", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }, fsm.DeliveryPending, 0, "no answer within"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seen := make(chan [2]string, 1) // the signature header and the body
			rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				seen <- [2]string{r.Header.Get(signature.HeaderName), string(b)}
				tc.answer(w, r)
			}))
			defer rc.Close()
			f := outbox(t, rc.URL)
			guard := &netguard.Guard{AllowPrivate: true}
			e := New(Config{State: f, Store: direct{f}, Client: guard.Client(300*time.Millisecond, false), Timeout: 300 * time.Millisecond,
				Render:   func(v fsm.Video, _ time.Time) any { return map[string]string{"id": v.ID, "status": v.Status} },
				IsLeader: func() bool { return true }, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			due := f.DueDeliveries(0, 10, fsm.DueOptions{})
			if len(due) != 1 {
				t.Fatalf("due: %+v", due)
			}
			if err := e.attempt(context.Background(), due[0]); err != nil {
				t.Fatal(err)
			}
			d := f.Deliveries(fsm.DeliveryFilter{})[0]
			a := d.Attempts[0]
			if d.State != tc.state || a.Status != tc.status || !strings.Contains(a.Error, tc.errorMatch) || (tc.errorMatch == "") != (a.Error == "") {
				t.Fatalf("delivery %+v", d)
			}
			if tc.state == fsm.DeliveryPending && d.NextAt != a.At+int64(time.Minute) {
				t.Fatalf("next attempt at %d, want a minute after %d", d.NextAt, a.At)
			}
			got := <-seen
			gotSig, gotBody := got[0], got[1]
			if err := signature.Verify("whsec_t", gotSig, []byte(gotBody), time.Unix(0, a.At), 0); err != nil {
				t.Fatalf("signature: %v", err)
			}
			want := `{"id":"evt_1","object":"event","type":"video.failed","created":0,"data":{"video":{"id":"vid_1","status":"failed"}}}`
			if gotBody != want {
				t.Fatalf("body\n%s\nwant\n%s", gotBody, want)
			}
		})
	}
}
