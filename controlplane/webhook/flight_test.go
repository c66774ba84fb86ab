package webhook

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/netguard"
)

// receivers serves every endpoint of a test at /<webhook id> and counts what
// is in flight as the receivers see it: a request counts from its arrival to
// just before its answer, so the counts never exceed the engine's own.
type receivers struct {
	hold   map[string]bool // endpoints whose requests wait for gate; set before serving
	status map[string]int  // what an endpoint answers (default 204); set before serving
	gate   chan struct{}   // each value lets one held request answer

	mu         sync.Mutex
	perHook    map[string]int  // requests in flight per endpoint
	open       map[string]bool // delivery ids in flight
	total      int
	maxTotal   int
	maxPerHook map[string]int
	twice      []string       // delivery ids that arrived while in flight already
	answered   map[string]int // answers per delivery id
	arrived    []string       // delivery ids in the order they arrived
}

func newReceivers(hold ...string) *receivers {
	r := &receivers{hold: map[string]bool{}, status: map[string]int{}, gate: make(chan struct{}), perHook: map[string]int{},
		open: map[string]bool{}, maxPerHook: map[string]int{}, answered: map[string]int{}}
	for _, h := range hold {
		r.hold[h] = true
	}
	return r
}

func (rc *receivers) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hook := strings.TrimPrefix(r.URL.Path, "/")
	var ev struct{ ID string }
	if err := json.NewDecoder(r.Body).Decode(&ev); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	id := ev.ID + "." + hook // as fsm.Delivery.ID names it
	rc.mu.Lock()
	if rc.open[id] {
		rc.twice = append(rc.twice, id)
	}
	rc.open[id] = true
	rc.arrived = append(rc.arrived, id)
	rc.perHook[hook]++
	rc.total++
	rc.maxPerHook[hook] = max(rc.maxPerHook[hook], rc.perHook[hook])
	rc.maxTotal = max(rc.maxTotal, rc.total)
	rc.mu.Unlock()
	if rc.hold[hook] {
		select {
		case <-rc.gate:
		case <-r.Context().Done(): // the engine gave up or the test ended
		}
	}
	rc.mu.Lock()
	delete(rc.open, id)
	rc.perHook[hook]--
	rc.total--
	rc.answered[id]++
	rc.mu.Unlock()
	w.WriteHeader(cmp.Or(rc.status[hook], http.StatusNoContent))
}

// read runs f under the receivers' lock.
func (rc *receivers) read(f func()) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	f()
}

// release lets one held request answer, failing the test if none arrives.
func (rc *receivers) release(t *testing.T) {
	t.Helper()
	select {
	case rc.gate <- struct{}{}:
	case <-time.After(30 * time.Second):
		t.Fatal("no held request to release within 30 s")
	}
}

// farm is an FSM with accounts whose endpoints point at receivers, and the
// engine delivering its outbox.
type farm struct {
	t   *testing.T
	f   *fsm.FSM
	url string
	now int64
}

func newFarm(t *testing.T, rc *receivers) *farm {
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	return &farm{t: t, f: fsm.New(), url: srv.URL, now: 1}
}

func (fm *farm) must(c fsm.Command) {
	fm.t.Helper()
	fm.now++
	if _, err := fm.f.ApplyCommand(c); err != nil {
		fm.t.Fatalf("%s: %v", c.Type(), err)
	}
}

// account creates an account with endpoints of those ids.
func (fm *farm) account(id string, hooks ...string) {
	fm.t.Helper()
	fm.must(&fsm.CreateAccount{AccountID: id, Name: id, Plan: fsm.PlanPro, Credits: 1000, KeyID: "key_" + id, Now: fm.now})
	for _, h := range hooks {
		fm.must(&fsm.CreateWebhook{WebhookID: h, AccountID: id, URL: fm.url + "/" + h, Events: fsm.EventTypes, Secret: "whsec_t", Now: fm.now})
	}
}

// fail fails n new videos of the account, each an event to all its endpoints,
// and returns the events' ids.
func (fm *farm) fail(account string, n int) []string {
	fm.t.Helper()
	var evs []string
	for range n {
		vid := fmt.Sprintf("vid_%d", fm.now)
		fm.must(&fsm.CreateVideo{VideoID: vid, AccountID: account, Price: 10, Now: fm.now, Spec: fsm.Spec{Mode: fsm.ModeAuto, Prompt: "p", DurationSeconds: 5}})
		fm.must(&fsm.FailVideo{VideoID: vid, Reason: "operator", Now: fm.now})
		evs = append(evs, fsm.EventID(vid))
	}
	return evs
}

// run starts an engine on the farm and returns it with stop, which ends its
// context and waits for Run to return; the test's end stops it too. Held
// receivers keep their requests for the whole test: the timeout is far longer
// than it.
func (fm *farm) run(concurrency, perEndpoint int) (e *Engine, stop func()) {
	guard := &netguard.Guard{AllowPrivate: true}
	e = New(Config{State: fm.f, Store: direct{fm.f}, Client: guard.Client(time.Hour, false), Timeout: time.Hour,
		Concurrency: concurrency, PerEndpoint: perEndpoint,
		Render:   func(v fsm.Video, _ time.Time) any { return map[string]string{"id": v.ID} },
		IsLeader: func() bool { return true }, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		e.Run(ctx)
	}()
	stop = sync.OnceFunc(func() {
		cancel()
		<-stopped
	})
	fm.t.Cleanup(stop)
	return e, stop
}

func (fm *farm) delivered(id string) bool {
	ds := fm.f.Deliveries(fsm.DeliveryFilter{EventID: strings.Split(id, ".")[0], WebhookID: strings.Split(id, ".")[1]})
	return len(ds) == 1 && ds[0].State == fsm.DeliveryDelivered
}

// waitFor polls cond until it holds, failing the test after 30 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond) // polling interval, not a wait for an event
	}
}

// A backlog to endpoints that do not answer, larger than the engine's slots
// and due before everything else, must leave a slot to another account's
// endpoint: its event goes out while the others are still held.
func TestSlowEndpointsLeaveSlotsToOthers(t *testing.T) {
	slow := []string{"whk_s1", "whk_s2", "whk_s3"}
	rc := newReceivers(slow...)
	fm := newFarm(t, rc)
	fm.account("acct_slow1", slow[:2]...)
	fm.account("acct_slow2", slow[2:]...)
	fm.account("acct_fast", "whk_fast")
	fm.fail("acct_slow1", 4) // 8 deliveries
	fm.fail("acct_slow2", 4) // 4 more: 12 held ones due first, more than the 8 slots
	fast := fm.fail("acct_fast", 1)[0] + ".whk_fast"
	const concurrency, perEndpoint = 8, 2
	fm.run(concurrency, perEndpoint)

	held := func() (n int) {
		rc.read(func() {
			for _, h := range slow {
				n += rc.perHook[h]
			}
		})
		return n
	}
	// Each slow endpoint holds its cap of slots, and the fast one has one of
	// the others: its delivery is made while they are held.
	waitFor(t, "the slow endpoints' slots to fill and the fast endpoint's delivery", func() bool {
		return held() == len(slow)*perEndpoint && fm.delivered(fast)
	})
	rc.read(func() {
		if rc.answered[fast] != 1 {
			t.Errorf("the fast endpoint answered %d times", rc.answered[fast])
		}
		for _, h := range slow {
			if rc.maxPerHook[h] > perEndpoint {
				t.Errorf("%s had %d requests at once, over the cap", h, rc.maxPerHook[h])
			}
		}
		if len(rc.answered) != 1 {
			t.Errorf("answered %v before the slow endpoints were released", rc.answered)
		}
	})
	for range 12 { // the backlog drains once its receivers answer
		rc.release(t)
	}
	waitFor(t, "the backlog", func() bool { return len(fm.f.Deliveries(fsm.DeliveryFilter{State: fsm.DeliveryDelivered})) == 13 })
}

// When every slot is held by hanging receivers of accounts with a backlog,
// the slot that frees first goes to another account's event due after that
// backlog: to the account with fewer attempts in flight, or, where the
// counts tie, to the endpoint that answers rather than the one whose last
// attempt failed. A healthy account's event is not held back for as long
// as others' receivers hang.
func TestFreedSlotGoesToAnAccountThatAnswers(t *testing.T) {
	for _, tc := range []struct {
		name     string
		accounts map[string][]string // the slow accounts' endpoints, all held
		status   int                 // what the held endpoints answer
	}{
		// One released: its account still has one in flight, the other none.
		{"fewer in flight", map[string][]string{"acct_s": {"whk_s1", "whk_s2"}}, http.StatusNoContent},
		// One released: both accounts have none in flight, and its endpoint
		// just failed.
		{"an endpoint that answers", map[string][]string{"acct_s1": {"whk_s1"}, "acct_s2": {"whk_s2"}}, http.StatusServiceUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var slow []string
			for _, hooks := range tc.accounts {
				slow = append(slow, hooks...)
			}
			rc := newReceivers(slow...)
			for _, h := range slow {
				rc.status[h] = tc.status
			}
			fm := newFarm(t, rc)
			for acct, hooks := range tc.accounts {
				fm.account(acct, hooks...)
				fm.fail(acct, 3)
			}
			fm.account("acct_fast", "whk_fast")
			fm.run(2, 1)
			waitFor(t, "both slots held", func() bool {
				n := 0
				rc.read(func() { n = rc.total })
				return n == 2
			})
			// Due after the whole backlog, while every slot is held.
			fast := fm.fail("acct_fast", 1)[0] + ".whk_fast"
			rc.release(t)
			waitFor(t, "the fast endpoint's delivery", func() bool { return fm.delivered(fast) })
			rc.read(func() {
				if len(rc.arrived) < 3 || rc.arrived[2] != fast {
					t.Errorf("arrivals %v: the freed slot did not go to %s", rc.arrived, fast)
				}
			})
			// The backlog is not starved: each of its six first attempts is made.
			for range 5 {
				rc.release(t)
			}
			waitFor(t, "the backlog's attempts", func() bool {
				n := 0
				rc.read(func() { n = len(rc.answered) })
				return n == 7
			})
		})
	}
}

// However the held requests are released and the loop woken, the receivers
// never see more than the caps in flight, nor one delivery twice at once, and
// every delivery is made once.
func TestInFlightBounds(t *testing.T) {
	for _, tc := range []struct {
		name                     string
		concurrency, perEndpoint int
		hooks                    int // endpoints, all held
		events                   int // events to each
	}{
		{"concurrency binds", 4, 2, 3, 3},
		{"endpoint cap binds", 8, 2, 2, 4},
		{"one at a time per endpoint", 3, 1, 2, 3},
		{"one endpoint", 4, 3, 1, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var hooks []string
			for i := range tc.hooks {
				hooks = append(hooks, fmt.Sprintf("whk_%d", i))
			}
			rc := newReceivers(hooks...)
			fm := newFarm(t, rc)
			fm.account("acct_1", hooks...)
			fm.fail("acct_1", tc.events)
			e, _ := fm.run(tc.concurrency, tc.perEndpoint)

			total := tc.hooks * tc.events
			wantMax := min(tc.concurrency, tc.hooks*tc.perEndpoint)
			waitFor(t, "the slots to fill", func() bool {
				n := 0
				rc.read(func() { n = rc.total })
				return n == wantMax
			})
			for range total {
				e.Notify() // wake-ups read the outbox again while attempts are in flight
				rc.release(t)
				e.Notify()
			}
			waitFor(t, "every delivery", func() bool {
				return len(fm.f.Deliveries(fsm.DeliveryFilter{State: fsm.DeliveryDelivered})) == total
			})
			rc.read(func() {
				if rc.maxTotal != wantMax {
					t.Errorf("at most %d in flight, want %d", rc.maxTotal, wantMax)
				}
				top := 0 // the cap must be reached, or the test shows nothing
				for _, h := range hooks {
					if got := rc.maxPerHook[h]; got > tc.perEndpoint {
						t.Errorf("%s: %d in flight at once, over the cap of %d", h, got, tc.perEndpoint)
					}
					top = max(top, rc.maxPerHook[h])
				}
				if want := min(tc.perEndpoint, tc.concurrency); top != want {
					t.Errorf("at most %d in flight to an endpoint, want %d", top, want)
				}
				if len(rc.twice) != 0 {
					t.Errorf("in flight twice at once: %v", rc.twice)
				}
				if len(rc.answered) != total {
					t.Errorf("%d deliveries answered, want %d", len(rc.answered), total)
				}
				for id, n := range rc.answered {
					if n != 1 {
						t.Errorf("%s answered %d times", id, n)
					}
				}
			})
		})
	}
}

// Ending Run's context cancels the attempts in flight, and none of them is
// recorded: a cancelled request is not the receiver's failure. (That Run
// waits for them before it returns is not what this checks: a cancelled
// attempt records nothing either way.)
func TestCancelledAttemptsAreNotRecorded(t *testing.T) {
	rc := newReceivers("whk_1")
	fm := newFarm(t, rc)
	fm.account("acct_1", "whk_1")
	fm.fail("acct_1", 3)
	_, stop := fm.run(4, 2)
	waitFor(t, "two requests held", func() bool {
		n := 0
		rc.read(func() { n = rc.total })
		return n == 2
	})
	stop()
	for _, d := range fm.f.Deliveries(fsm.DeliveryFilter{}) {
		if d.State != fsm.DeliveryPending || len(d.Attempts) != 0 {
			t.Errorf("%s: %s with %d attempts after Run returned, want pending and none", d.ID(), d.State, len(d.Attempts))
		}
	}
	if n := len(fm.f.Deliveries(fsm.DeliveryFilter{})); n != 3 {
		t.Fatalf("%d deliveries, want 3", n)
	}
}
