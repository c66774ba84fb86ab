package bench

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The optional webhook receiver of a load run: it registers one endpoint
// per API key (webhooks belong to an account, and a run may span several),
// verifies every delivery's signature, and times the first video.completed
// of each video from the intended send time of its create, so it can be
// read next to the time to completed seen by polling. DESIGN.md lets bench
// import models and scheduler only, so the Service-Signature check is done
// here with the standard library, to the contract's receiver rules.

// signatureHeader is the contract's delivery signature header.
const signatureHeader = "Service-Signature"

// signatureTolerance is how far a delivery's t may be from now (the
// contract: "reject timestamps older than about 5 minutes").
const signatureTolerance = 5 * time.Minute

// maxDeliveryBytes bounds one delivery body read by the receiver.
const maxDeliveryBytes = 1 << 20

// WebhookReport is what the receiver saw. TimeToWebhook is in seconds.
type WebhookReport struct {
	URL string `json:"url"` // the base the endpoints were registered at
	// Deliveries counts every POST received; BadSignatures those refused:
	// signature missing, wrong or stale (401), or to an unknown endpoint or
	// not an event (400). None is answered 2xx, so the farm retries them.
	Deliveries    int `json:"deliveries"`
	BadSignatures int `json:"bad_signatures"`
	// Events counts distinct verified events by type; Duplicates the
	// verified deliveries that repeated an evt_ id an endpoint had already
	// received; Foreign the events for videos this run did not create
	// (other traffic on the same account).
	Events     map[string]int `json:"events"`
	Duplicates int            `json:"duplicates"`
	Foreign    int            `json:"foreign"`
	// TimeToWebhook is from the intended send time of the create to the
	// first video.completed delivery of the video.
	TimeToWebhook LatencyStats `json:"time_to_webhook_s"`
	// NotDelivered counts videos polled completed (or failed) whose
	// video.completed (video.failed) never arrived by the end of the drain.
	NotDelivered map[string]int `json:"not_delivered"`
}

// hookEndpoint is one registered endpoint.
type hookEndpoint struct {
	key, id, secret string
	seen            map[string]bool // evt_ ids received here
}

// hookReceiver is the HTTP receiver and its counts.
type hookReceiver struct {
	base    string // the public base URL, endpoints are base/hooks/<n>
	srv     *http.Server
	run     *loadRun
	changed chan struct{} // a token after each verified delivery

	mu                    sync.Mutex
	eps                   []*hookEndpoint
	deliveries, bad, dups int
	events                map[string]int
	arrived               map[string]map[string]time.Time // video id -> event type -> first arrival
	videos                map[string]time.Time            // accepted video id -> intended send
	final                 map[string]string               // video id -> terminal status polled
}

// startHooks listens, serves and registers one endpoint per distinct key.
// On an error nothing is left registered.
func startHooks(ctx context.Context, r *loadRun) (*hookReceiver, error) {
	ln, err := net.Listen("tcp", r.cfg.WebhookListen)
	if err != nil {
		return nil, fmt.Errorf("bench: webhook receiver: %w", err)
	}
	h := &hookReceiver{
		base: strings.TrimRight(r.cfg.WebhookURL, "/"), run: r, changed: make(chan struct{}, 1),
		events: map[string]int{}, arrived: map[string]map[string]time.Time{},
		videos: map[string]time.Time{}, final: map[string]string{},
	}
	if h.base == "" {
		h.base = "http://" + reachable(ln.Addr().(*net.TCPAddr))
	}
	h.srv = &http.Server{Handler: http.HandlerFunc(h.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = h.srv.Serve(ln) }()
	seen := map[string]bool{}
	for _, k := range r.cfg.APIKeys {
		if seen[k] {
			continue
		}
		seen[k] = true
		if err := h.register(ctx, k); err != nil {
			h.close()
			return nil, err
		}
	}
	return h, nil
}

// reachable turns a wildcard listen address into one this host can dial.
func reachable(a *net.TCPAddr) string {
	if a.IP.IsUnspecified() {
		return net.JoinHostPort("127.0.0.1", strconv.Itoa(a.Port))
	}
	return a.String()
}

// register creates the endpoint for key at base/hooks/<n>.
func (h *hookReceiver) register(ctx context.Context, key string) error {
	h.mu.Lock()
	n := len(h.eps)
	h.mu.Unlock()
	body, _ := json.Marshal(map[string]any{
		"url": fmt.Sprintf("%s/hooks/%d", h.base, n), "events": []string{"video.completed", "video.failed"},
	})
	var ep struct{ ID, Secret string }
	if err := h.run.apiJSON(ctx, http.MethodPost, "/v1/webhooks", key, body, http.StatusCreated, &ep); err != nil {
		return fmt.Errorf("bench: register the webhook receiver %s/hooks/%d: %w", h.base, n, err)
	}
	if ep.ID == "" || ep.Secret == "" {
		return fmt.Errorf("bench: POST /v1/webhooks answered no id or secret")
	}
	h.mu.Lock()
	h.eps = append(h.eps, &hookEndpoint{key: key, id: ep.ID, secret: ep.Secret, seen: map[string]bool{}})
	h.mu.Unlock()
	return nil
}

// close deletes the endpoints and stops the receiver. It does not take the
// run's context: an interrupted run must still leave nothing registered.
func (h *hookReceiver) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h.mu.Lock()
	eps := h.eps
	h.mu.Unlock()
	for _, ep := range eps {
		if err := h.run.apiJSON(ctx, http.MethodDelete, "/v1/webhooks/"+ep.id, ep.key, nil, http.StatusOK, nil); err != nil {
			slog.Warn("bench: could not delete the run's webhook endpoint; delete it by hand", "id", ep.id, "err", err)
		}
	}
	_ = h.srv.Shutdown(ctx)
}

// hookEvent is the part of a delivery the receiver reads.
type hookEvent struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	Data struct {
		Video struct {
			ID string `json:"id"`
		} `json:"video"`
	} `json:"data"`
}

func (h *hookReceiver) serve(w http.ResponseWriter, req *http.Request) {
	at := time.Now()
	// The last /hooks/<n>: a --webhook-url with a path may reach us with
	// or without it, depending on the proxy in between.
	_, tail, found := cutLast(req.URL.Path, "/hooks/")
	n, err := strconv.Atoi(tail)
	if req.Method != http.MethodPost || !found || err != nil {
		http.NotFound(w, req)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, maxDeliveryBytes))
	h.mu.Lock()
	defer h.mu.Unlock()
	h.deliveries++
	if err != nil || n < 0 || n >= len(h.eps) {
		h.bad++
		http.Error(w, "unknown endpoint or unreadable body", http.StatusBadRequest)
		return
	}
	ep := h.eps[n]
	var ev hookEvent
	if err := verifySignature(ep.secret, req.Header.Get(signatureHeader), body, at); err != nil {
		h.bad++
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	if err := json.Unmarshal(body, &ev); err != nil || ev.ID == "" {
		h.bad++
		http.Error(w, "not an event object", http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusNoContent)
	if ep.seen[ev.ID] {
		h.dups++
		return
	}
	ep.seen[ev.ID] = true
	h.events[ev.Type]++
	vid := ev.Data.Video.ID
	if h.arrived[vid] == nil {
		h.arrived[vid] = map[string]time.Time{}
	}
	if _, ok := h.arrived[vid][ev.Type]; !ok {
		h.arrived[vid][ev.Type] = at
	}
	select {
	case h.changed <- struct{}{}:
	default:
	}
}

// cutLast is strings.Cut at the last sep.
func cutLast(s, sep string) (before, after string, found bool) {
	if i := strings.LastIndex(s, sep); i >= 0 {
		return s[:i], s[i+len(sep):], true
	}
	return s, "", false
}

// accepted records a video of this run and the intended send of its create.
func (h *hookReceiver) accepted(id string, intended time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.videos[id] = intended
}

// terminal records the status polling ended on.
func (h *hookReceiver) terminal(id, status string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.final[id] = status
}

// missing counts videos polled completed or failed without their event yet.
func (h *hookReceiver) missing() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]int{}
	for id, st := range h.final {
		if st != "completed" && st != "failed" {
			continue
		}
		if _, ok := h.arrived[id]["video."+st]; !ok {
			out["video."+st]++
		}
	}
	return out
}

// wait returns once every video polled terminal has had its event, or ctx
// ends (the drain's deadline): the contract allows about a minute between
// completion and delivery, so the poll seeing it first is normal.
func (h *hookReceiver) wait(ctx context.Context) {
	for len(h.missing()) > 0 {
		select {
		case <-ctx.Done():
			return
		case <-h.changed:
		}
	}
}

func (h *hookReceiver) report() WebhookReport {
	missing := h.missing()
	h.mu.Lock()
	defer h.mu.Unlock()
	ttw := newHist()
	foreign := 0
	for vid, types := range h.arrived {
		intended, ours := h.videos[vid]
		if !ours {
			foreign += len(types)
			continue
		}
		if at, ok := types["video.completed"]; ok {
			record(ttw, at.Sub(intended))
		}
	}
	return WebhookReport{
		URL: h.base + "/hooks/", Deliveries: h.deliveries, BadSignatures: h.bad,
		Events: h.events, Duplicates: h.dups, Foreign: foreign,
		TimeToWebhook: stats(ttw, time.Second), NotDelivered: missing,
	}
}

// verifySignature checks a Service-Signature header (t=<unix>,v1=<hex>,
// any number of v1) against body by the contract's receiver rules.
func verifySignature(secret, header string, body []byte, now time.Time) error {
	if header == "" {
		return errors.New("no " + signatureHeader + " header")
	}
	var ts int64 = -1
	var sigs [][]byte
	for part := range strings.SplitSeq(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return fmt.Errorf("%s: t=%q is not unix seconds", signatureHeader, v)
			}
			ts = n
		case "v1":
			if b, err := hex.DecodeString(v); err == nil && len(b) == sha256.Size {
				sigs = append(sigs, b)
			}
		}
	}
	if ts < 0 || len(sigs) == 0 {
		return fmt.Errorf("%s %q: want t=<unix>,v1=<64 hex digits>", signatureHeader, header)
	}
	m := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(m, "%d.", ts)
	m.Write(body)
	want := m.Sum(nil)
	ok := false
	for _, s := range sigs {
		ok = hmac.Equal(s, want) || ok // every candidate compared: timing says nothing
	}
	if !ok {
		return errors.New("signature does not match the body and the endpoint's secret")
	}
	if d := now.Sub(time.Unix(ts, 0)); d > signatureTolerance || d < -signatureTolerance {
		return fmt.Errorf("signed %s from now, outside the %s tolerance", d.Round(time.Second), signatureTolerance)
	}
	return nil
}

// apiJSON sends one request with key and decodes a want answer into out;
// any other answer is an error carrying the envelope's code and message.
func (r *loadRun) apiJSON(ctx context.Context, method, path, key string, body []byte, want int, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, r.base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := r.cfg.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxDeliveryBytes))
	if err != nil {
		return err
	}
	if resp.StatusCode != want {
		var env struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		_ = json.Unmarshal(raw, &env)
		return fmt.Errorf("%s %s answered %d %s: %s", method, path, resp.StatusCode, env.Error.Code, env.Error.Message)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(raw, out)
}

// checkWebhookURL validates the --webhook-url override.
func checkWebhookURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("bench: webhook URL %q must be an absolute http(s) URL", s)
	}
	return nil
}
