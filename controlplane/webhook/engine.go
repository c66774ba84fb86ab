// Package webhook delivers the FSM's webhook outbox. It runs on the leader only:
// it reads due deliveries from the replicated state, POSTs each signed event with
// the address guard's client (redirects not followed, a bounded timeout) and
// records every attempt with an FSM command, which decides whether the delivery
// is done, retried later or abandoned. Because the outbox and the attempts live
// in the replicated state, a restarted node or a new leader carries on where the
// last one stopped.
//
// Attempts run side by side, up to Config.Concurrency of them and at most
// Config.PerEndpoint to one endpoint; a freed slot goes to the account with
// the fewest attempts in flight (fsm.DueDeliveries). A slot is filled again as soon as the
// attempt holding it ends, not when a whole batch has: a receiver that never
// answers holds its slot for the timeout, and one account's dead endpoints
// must not hold back every other account's events (the contract promises an
// event within about 60 seconds). The loop keeps the set of deliveries in
// flight and the FSM leaves them out of what it hands back, so none is sent
// twice at once.
//
// Receivers check deliveries with the signature sub-package.
package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/controlplane/sealed"
	"github.com/vidfarm/vidfarm/controlplane/webhook/signature"
)

// Clock tells the time and waits; tests inject one they move by hand. Waits name
// an instant, not a duration, so a clock moved between reading it and waiting
// cannot push the wake-up later.
type Clock interface {
	Now() time.Time
	// Until returns a channel that receives once the clock reaches t.
	Until(t time.Time) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                     { return time.Now() }
func (realClock) Until(t time.Time) <-chan time.Time { return time.After(time.Until(t)) }

// State is the outbox as the engine reads it; *fsm.FSM implements it.
type State interface {
	DueDeliveries(now int64, limit int, opt fsm.DueOptions) []fsm.DueDelivery
	NextDeliveryAt(opt fsm.DueOptions) (int64, bool)
	PendingDeliveries() int
	DisabledWebhooks() int
}

// Store proposes commands; raftnode.Node implements it.
type Store interface {
	Apply(ctx context.Context, cmd fsm.Command) (any, error)
}

var (
	_ State = (*fsm.FSM)(nil)
	_ Clock = realClock{}
)

// Defaults of Config.
const (
	DefaultTimeout = 10 * time.Second
	// DefaultConcurrency: an attempt is a POST that mostly waits on the
	// network, so many cost little, and with DefaultPerEndpoint it takes 32
	// endpoints that never answer to fill every slot (an account has 5 at
	// most) before anyone else's event waits for one.
	DefaultConcurrency = 32
	// DefaultPerEndpoint: one attempt at a time to an endpoint. A dead one
	// then holds one slot, and an endpoint's attempts are recorded in the
	// order they were made, which its run of failures (Webhook.FailingSince
	// to LastFailedAt, what DisableWebhook measures) is kept by: two at once
	// could be recorded the other way round and shorten the run. A healthy
	// receiver answering in 50 ms still takes 20 deliveries a second.
	DefaultPerEndpoint = 1
	// DefaultRetention is how long finished deliveries (and their events) stay
	// readable for operators before PruneDeliveries drops them.
	DefaultRetention = 7 * 24 * time.Hour
	// URLValidity is how long signed file URLs in an event stay valid, counted
	// from the event: far past the last retry (8 h 36 min), and the same for
	// every attempt, so every retry sends the same body.
	URLValidity = 7 * 24 * time.Hour
	// maxResponse is how much of a receiver's answer is read (and discarded).
	maxResponse = 64 << 10
	pruneEvery  = time.Hour
	// idleWait bounds a wait with nothing due, so leadership and pruning are
	// looked at now and then even if no wake-up comes.
	idleWait = time.Minute
	// backoff is the pause in starting attempts after one could not be
	// recorded (leadership lost, commit timeout), so a failing store is not
	// hammered.
	backoff = time.Second
)

// Config wires the engine.
type Config struct {
	State State
	Store Store
	// Client sends deliveries: the guard's client, not following redirects.
	Client *http.Client
	// Render is the public video object as the API shows it, with signed file
	// URLs valid until urlExpiry.
	Render func(v fsm.Video, urlExpiry time.Time) any
	// RenderWebhook is the public webhook endpoint object, for the events
	// about an endpoint (webhook.test, webhook.disabled).
	RenderWebhook func(w fsm.Webhook) any
	IsLeader      func() bool
	Clock         Clock // nil: the system clock
	// Timeout bounds one attempt, connect to last byte (default 10 s).
	Timeout     time.Duration
	Concurrency int // attempts in flight at most (default DefaultConcurrency)
	// PerEndpoint bounds the attempts in flight to one endpoint (default
	// DefaultPerEndpoint), so that a backlog to slow endpoints leaves slots
	// to the others.
	PerEndpoint int
	Retention   time.Duration // default DefaultRetention
	Logger      *slog.Logger
	Metrics     *Metrics // nil: none
	// Secrets opens sealed signing secrets (package sealed); nil opens only
	// plain ones.
	Secrets *sealed.Key
}

// Engine is the delivery loop.
type Engine struct {
	cfg       Config
	wake      chan struct{}
	lastPrune time.Time
}

// New returns an engine; Run starts it.
func New(cfg Config) *Engine {
	if cfg.Clock == nil {
		cfg.Clock = realClock{}
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.PerEndpoint <= 0 {
		cfg.PerEndpoint = DefaultPerEndpoint
	}
	if cfg.Retention <= 0 {
		cfg.Retention = DefaultRetention
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Engine{cfg: cfg, wake: make(chan struct{}, 1)}
}

// SetStore gives the engine the store it records attempts through, when the
// store is made after the engine (the node replays its log into the FSM the
// engine is already listening to). Call it before Run.
func (e *Engine) SetStore(st Store) { e.cfg.Store = st }

// Notify wakes the loop: a new event was written, or leadership changed. It
// never blocks, so the FSM may call it while applying.
func (e *Engine) Notify() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// flight is the deliveries being attempted. Only Run's goroutine touches it;
// attempts report their end on done, which has room for every slot so that
// an attempt never waits to report.
type flight struct {
	ids      map[string]bool // delivery ids
	busy     map[string]int  // attempts per webhook id
	accounts map[string]int  // attempts per account
	done     chan ended
	pause    time.Time // no attempt starts before it
	wg       sync.WaitGroup
}

// ended is an attempt's end: recorded is false when its outcome could not be
// written to the store.
type ended struct {
	id, webhookID, accountID string
	recorded                 bool
}

// Run delivers until ctx ends. It returns only once every attempt it started
// has ended: ending ctx cancels their requests and their recording, and an
// attempt left running could otherwise still write an outcome through a store
// its caller has closed, or overlap a new engine's attempt of the same delivery.
func (e *Engine) Run(ctx context.Context) {
	fl := &flight{ids: make(map[string]bool), busy: make(map[string]int), accounts: make(map[string]int),
		done: make(chan ended, e.cfg.Concurrency)}
	defer fl.wg.Wait()
	for ctx.Err() == nil {
		now := e.cfg.Clock.Now()
		next := now.Add(idleWait)
		if e.cfg.IsLeader() {
			next = e.step(ctx, now, fl)
		}
		if !next.After(now) {
			continue
		}
		select {
		case <-ctx.Done():
		case <-e.wake:
		case x := <-fl.done:
			e.finish(fl, x)
			// Take every end that is in before filling the slots again, so
			// the outbox is read once for them all.
			for drained := false; !drained; {
				select {
				case x := <-fl.done:
					e.finish(fl, x)
				default:
					drained = true
				}
			}
		case <-e.cfg.Clock.Until(next):
		}
	}
}

// finish frees an ended attempt's slot.
func (e *Engine) finish(fl *flight, x ended) {
	delete(fl.ids, x.id)
	if fl.busy[x.webhookID]--; fl.busy[x.webhookID] <= 0 {
		delete(fl.busy, x.webhookID)
	}
	if fl.accounts[x.accountID]--; fl.accounts[x.accountID] <= 0 {
		delete(fl.accounts, x.accountID)
	}
	if !x.recorded {
		fl.pause = e.cfg.Clock.Now().Add(backoff)
	}
}

// step prunes when it is time, starts due deliveries in the free slots, and
// says when to look again. An ended attempt wakes the loop by itself, so the
// time is for what no attempt in flight holds back.
func (e *Engine) step(ctx context.Context, now time.Time, fl *flight) time.Time {
	if now.Sub(e.lastPrune) >= pruneEvery {
		e.prune(ctx, now) // a failed prune waits for the next round, like a done one
		e.lastPrune = now
	}
	next := now.Add(idleWait)
	if p := e.lastPrune.Add(pruneEvery); p.Before(next) {
		next = p
	}
	if now.Before(fl.pause) {
		if fl.pause.Before(next) {
			next = fl.pause
		}
		return next
	}
	free := e.cfg.Concurrency - len(fl.ids)
	if free <= 0 {
		return next // every slot is taken
	}
	opt := fsm.DueOptions{Skip: fl.ids, PerWebhook: e.cfg.PerEndpoint, Busy: fl.busy, BusyAccounts: fl.accounts}
	due := e.cfg.State.DueDeliveries(now.UnixNano(), free, opt)
	for _, d := range due {
		e.start(ctx, fl, d)
	}
	if len(due) > 0 {
		// An attempt that started wakes the loop when it ends; looking for
		// the next due time too would read the whole outbox twice a round.
		return next
	}
	// Whatever is due waits for an attempt in flight to its endpoint, and
	// opt leaves those out of the time.
	if at, ok := e.cfg.State.NextDeliveryAt(opt); ok && at < next.UnixNano() {
		next = time.Unix(0, at)
	}
	return next
}

// start attempts d in a slot of its own.
func (e *Engine) start(ctx context.Context, fl *flight, d fsm.DueDelivery) {
	id := d.ID()
	fl.ids[id] = true
	fl.busy[d.WebhookID]++
	fl.accounts[d.AccountID]++
	fl.wg.Go(func() {
		err := e.attempt(ctx, d)
		fl.done <- ended{id: id, webhookID: d.WebhookID, accountID: d.AccountID, recorded: err == nil}
	})
}

func (e *Engine) prune(ctx context.Context, now time.Time) {
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	n, err := fsm.Do(actx, e.cfg.Store, &fsm.PruneDeliveries{Before: now.Add(-e.cfg.Retention).UnixNano()})
	if err != nil {
		if ctx.Err() == nil {
			e.cfg.Logger.Warn("prune webhook deliveries", "err", err)
		}
		return
	}
	if n > 0 {
		e.cfg.Logger.Info("pruned finished webhook deliveries", "count", n, "retention", e.cfg.Retention)
	}
}

// EventObject is the contract's event object, as a delivery carries it and
// the account's event log (GET /v1/events) lists it. Data holds video for a
// video's event and webhook (the endpoint object) for an endpoint's.
type EventObject struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Type    string `json:"type"`
	Created int64  `json:"created"`
	Data    struct {
		Video   any `json:"video,omitempty"`
		Webhook any `json:"webhook,omitempty"`
	} `json:"data"`
}

// Body is the JSON a delivery of ev carries; it depends only on the event, so
// every attempt sends the same bytes.
func Body(ev fsm.Event, render func(fsm.Video, time.Time) any, renderWebhook func(fsm.Webhook) any) ([]byte, error) {
	created := time.Unix(0, ev.Created)
	out := EventObject{ID: ev.ID, Object: "event", Type: ev.Type, Created: created.Unix()}
	if ev.Webhook != nil {
		out.Data.Webhook = renderWebhook(*ev.Webhook)
	} else {
		out.Data.Video = render(ev.Video, created.Add(URLValidity))
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("encode event %s: %w", ev.ID, err)
	}
	return b, nil
}

// attempt POSTs one delivery and records the outcome; the error is the
// recording's.
func (e *Engine) attempt(ctx context.Context, d fsm.DueDelivery) error {
	log := e.cfg.Logger.With("event_id", d.EventID, "webhook_id", d.WebhookID, "attempt", len(d.Attempts)+1)
	body, err := Body(d.Event, e.cfg.Render, e.cfg.RenderWebhook)
	if err != nil {
		log.Error("webhook body", "err", err)
		return err
	}
	at := e.cfg.Clock.Now()
	start := time.Now()
	status, failure := e.post(ctx, d, body, at)
	latency := time.Since(start)
	if ctx.Err() != nil {
		return ctx.Err() // shutting down: this attempt is not the receiver's fault
	}
	e.cfg.Metrics.observe(status, failure, latency)
	cmd := &fsm.RecordDelivery{EventID: d.EventID, WebhookID: d.WebhookID, At: at.UnixNano(), Status: status,
		Error: failure, LatencyMS: latency.Milliseconds()}
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rec, err := fsm.Do(actx, e.cfg.Store, cmd)
	if errors.Is(err, fsm.ErrDeliveryFinished) || errors.Is(err, fsm.ErrDeliveryNotFound) {
		log.Info("webhook delivery ended while it was attempted (endpoint deleted)", "err", err)
		return nil
	}
	if err != nil {
		log.Warn("record webhook attempt", "err", err)
		return err
	}
	e.cfg.Metrics.finished(rec.State)
	switch rec.State {
	case fsm.DeliveryDelivered:
		log.Info("webhook delivered", "status", status, "latency_ms", latency.Milliseconds())
	case fsm.DeliveryAbandoned:
		log.Warn("webhook abandoned after the last retry", "status", status, "error", failure)
	default:
		log.Warn("webhook attempt failed; will retry", "status", status, "error", failure,
			"next_at", time.Unix(0, rec.NextAt).UTC())
	}
	return nil
}

// post sends the request and returns the receiver's status (0 for none) and, for
// anything but a 2xx, why it counts as a failure.
func (e *Engine) post(ctx context.Context, d fsm.DueDelivery, body []byte, at time.Time) (int, string) {
	if d.Secret == "" {
		return 0, "endpoint deleted"
	}
	secrets, err := e.signingSecrets(d)
	if err != nil {
		return 0, "cannot sign: " + err.Error()
	}
	ctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.URL, bytes.NewReader(body))
	if err != nil {
		return 0, "bad request: " + err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "vidfarm-webhooks/1")
	req.Header.Set(signature.HeaderName, signature.HeaderAll(at, body, secrets...))
	res, err := e.cfg.Client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return 0, fmt.Sprintf("no answer within %s", e.cfg.Timeout)
		}
		return 0, err.Error()
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, maxResponse))
	switch {
	case res.StatusCode >= 200 && res.StatusCode < 300:
		return res.StatusCode, ""
	case res.StatusCode >= 300 && res.StatusCode < 400:
		return res.StatusCode, fmt.Sprintf("receiver answered %d; redirects are not followed, register the final URL", res.StatusCode)
	}
	return res.StatusCode, fmt.Sprintf("receiver answered %d", res.StatusCode)
}

// signingSecrets opens the endpoint's secret and, while a rotation's overlap
// lasts, its previous one: the new secret's signature comes first.
func (e *Engine) signingSecrets(d fsm.DueDelivery) ([]string, error) {
	secret, err := e.cfg.Secrets.Open(d.Secret, d.WebhookID)
	if err != nil {
		return nil, err
	}
	if d.OldSecret == "" {
		return []string{secret}, nil
	}
	// The previous secret is not sealed again when the secrets key changes
	// (it lives a day at most): one that no key opens any more must not stop
	// the delivery, which the current secret signs.
	old, err := e.cfg.Secrets.Open(d.OldSecret, d.WebhookID)
	if err != nil {
		e.cfg.Logger.Warn("the previous webhook secret does not open with any secrets key; signing with the current one only",
			"webhook_id", d.WebhookID, "err", err)
		return []string{secret}, nil
	}
	return []string{secret, old}, nil
}
