package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// The open-loop load generator (load*.go): creates arrive at the rate
// asked whatever the farm does, as real clients do, and every latency is
// measured from the moment a request was meant to be sent, so a stalled
// server or a saturated generator shows up in the figures instead of
// hiding between requests (coordinated omission). Each accepted video is
// then polled, as a client would, until it is completed, failed or a
// preview, or the drain deadline passes.

// LoadConfig describes an open-loop run against a live farm.
type LoadConfig struct {
	BaseURL string   // e.g. http://127.0.0.1:8080
	APIKeys []string // request i uses key i mod len
	// Rate of creates per second, sent at evenly spaced intended times for
	// Duration.
	Rate     float64
	Duration time.Duration
	// Body is the POST /v1/videos body; nil means DefaultLoadBody.
	Body []byte
	// PollInterval between GETs of one video; 0 means the
	// poll_interval_seconds the create answered (1 s if none).
	PollInterval time.Duration
	// Drain is how long after the last send videos are still polled; those
	// not terminal by then are reported as unfinished. 0 means 10 minutes.
	Drain time.Duration
	// WebhookListen, when set, is the address of a receiver the run
	// starts and registers as a webhook endpoint per API key (deleted at
	// the end); WebhookURL is the base the farm reaches it at, when not
	// http://<the listen address>. The farm must accept a plain-http,
	// private target for a local receiver (--dev-allow-private-webhooks).
	WebhookListen, WebhookURL string
	// Progress, when set, is called about once a second.
	Progress func(LoadProgress)
	Client   *http.Client
}

// DefaultLoadBody is a 5-second auto video.
var DefaultLoadBody = DefaultCreateBody

// LoadProgress is a running count.
type LoadProgress struct {
	Elapsed                       time.Duration
	Sent, Accepted, Rejected      int
	Completed, Failed, InProgress int
	// AwaitingWebhooks counts videos polled completed or failed whose
	// event the webhook receiver has not had yet.
	AwaitingWebhooks int
}

const defaultDrain = 10 * time.Minute

// maxLoadRequests bounds one run (rate x duration).
const maxLoadRequests = 10_000_000

// terminalStatus reports whether a video in this status is done changing
// on its own.
func terminalStatus(s string) bool {
	return s == "completed" || s == "failed" || s == "preview"
}

// Check says what is wrong with cfg, before anything is sent.
func (cfg LoadConfig) Check() error {
	switch {
	case cfg.BaseURL == "":
		return errors.New("bench: load needs the server's base URL")
	case len(cfg.APIKeys) == 0:
		return errors.New("bench: load needs at least one API key")
	case !finite(cfg.Rate) || cfg.Rate <= 0 || cfg.Rate > 100_000:
		return fmt.Errorf("bench: rate must be > 0 and <= 100000 per second, got %v", cfg.Rate)
	case cfg.Duration <= 0:
		return fmt.Errorf("bench: duration must be > 0, got %s", cfg.Duration)
	case cfg.Rate*cfg.Duration.Seconds() > maxLoadRequests:
		return fmt.Errorf("bench: rate x duration is over %d requests", maxLoadRequests)
	case cfg.PollInterval < 0 || cfg.Drain < 0:
		return errors.New("bench: poll interval and drain must be >= 0")
	case cfg.WebhookURL != "" && cfg.WebhookListen == "":
		return errors.New("bench: a webhook URL needs a webhook listen address for the receiver")
	case cfg.Body != nil && !json.Valid(cfg.Body):
		return errors.New("bench: the create body is not valid JSON")
	}
	if cfg.WebhookURL != "" {
		return checkWebhookURL(cfg.WebhookURL)
	}
	return nil
}

// RunLoad runs the load until Duration has passed and the accepted videos
// are terminal (or Drain has passed), or ctx ends.
func RunLoad(ctx context.Context, cfg LoadConfig) (LoadReport, error) {
	if err := cfg.Check(); err != nil {
		return LoadReport{}, err
	}
	if cfg.Body == nil {
		cfg.Body = DefaultLoadBody
	}
	if cfg.Drain == 0 {
		cfg.Drain = defaultDrain
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 1024}}
	}
	r := &loadRun{cfg: cfg, base: strings.TrimRight(cfg.BaseURL, "/"), rec: newLoadRecorder()}
	if cfg.WebhookListen != "" {
		h, err := startHooks(ctx, r)
		if err != nil {
			return LoadReport{}, err
		}
		defer h.close()
		r.hooks = h
	}
	start := time.Now()
	r.start = start
	sendCtx, cancelSend := context.WithDeadline(ctx, start.Add(cfg.Duration))
	defer cancelSend()
	pollCtx, cancelPoll := context.WithDeadline(ctx, start.Add(cfg.Duration+cfg.Drain))
	defer cancelPoll()

	stopProgress := r.progress(pollCtx)
	interval := time.Duration(float64(time.Second) / cfg.Rate)
	n := int(cfg.Duration / interval)
	var wg sync.WaitGroup
	timer := time.NewTimer(0)
	<-timer.C
send:
	for i := 0; i < n; i++ {
		intended := start.Add(time.Duration(i) * interval)
		if d := time.Until(intended); d > 0 {
			timer.Reset(d)
			select {
			case <-sendCtx.Done():
				timer.Stop()
				break send
			case <-timer.C:
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.one(pollCtx, intended, cfg.APIKeys[i%len(cfg.APIKeys)])
		}()
	}
	wg.Wait()
	if r.hooks != nil {
		r.hooks.wait(pollCtx)
	}
	stopProgress()
	rep := r.rec.report(cfg, time.Since(start))
	if r.hooks != nil {
		w := r.hooks.report()
		rep.Webhooks = &w
	}
	return rep, ctx.Err()
}

// loadRun is one run's shared state.
type loadRun struct {
	cfg   LoadConfig
	base  string
	start time.Time
	rec   *loadRecorder
	hooks *hookReceiver // nil without a webhook receiver
}

// progress calls cfg.Progress once a second until the returned stop.
func (r *loadRun) progress(ctx context.Context) (stop func()) {
	if r.cfg.Progress == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				r.cfg.Progress(r.snapshot())
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
		r.cfg.Progress(r.snapshot())
	}
}

// snapshot is the progress so far.
func (r *loadRun) snapshot() LoadProgress {
	p := r.rec.progress(time.Since(r.start))
	if r.hooks != nil {
		for _, n := range r.hooks.missing() {
			p.AwaitingWebhooks += n
		}
	}
	return p
}

// videoReply is the part of a video object the load generator reads.
type videoReply struct {
	ID                  string  `json:"id"`
	Status              string  `json:"status"`
	PollIntervalSeconds float64 `json:"poll_interval_seconds"`
	Error               struct {
		Code string `json:"code"`
	} `json:"error"`
}

// call sends one request and decodes the answer; code is "" on want,
// else the envelope's error code, http_NNN, "timeout" (no answer within
// the client's timeout, a minute by default) or "transport".
func (r *loadRun) call(ctx context.Context, method, path, key string, body []byte, want int) (videoReply, string, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, r.base+path, rd)
	if err != nil {
		return videoReply{}, "", err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := r.cfg.Client.Do(req)
	if err != nil {
		if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
			return videoReply{}, "timeout", err
		}
		return videoReply{}, "transport", err
	}
	defer resp.Body.Close()
	var v videoReply
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return videoReply{}, "transport", err
	}
	_ = json.Unmarshal(raw, &v)
	switch {
	case resp.StatusCode == want:
		return v, "", nil
	case v.Error.Code != "":
		return v, v.Error.Code, nil
	}
	return v, fmt.Sprintf("http_%d", resp.StatusCode), nil
}

// one sends the create meant for intended and follows its video.
func (r *loadRun) one(pollCtx context.Context, intended time.Time, key string) {
	r.rec.sent(time.Since(intended))
	v, code, err := r.call(pollCtx, http.MethodPost, "/v1/videos", key, r.cfg.Body, http.StatusCreated)
	if pollCtx.Err() != nil && err != nil {
		r.rec.created("cut_off", 0)
		return
	}
	r.rec.created(code, time.Since(intended))
	if code != "" {
		return
	}
	if r.hooks != nil {
		r.hooks.accepted(v.ID, intended)
	}
	every := r.cfg.PollInterval
	if every == 0 {
		every = time.Duration(max(v.PollIntervalSeconds, 0.05) * float64(time.Second))
		if v.PollIntervalSeconds == 0 {
			every = time.Second
		}
	}
	t := time.NewTimer(every)
	defer t.Stop()
	for !terminalStatus(v.Status) {
		select {
		case <-pollCtx.Done():
			r.rec.finished("unfinished", 0)
			return
		case <-t.C:
		}
		sent := time.Now()
		got, code, err := r.call(pollCtx, http.MethodGet, "/v1/videos/"+v.ID, key, nil, http.StatusOK)
		if err != nil && pollCtx.Err() != nil {
			r.rec.finished("unfinished", 0)
			return
		}
		r.rec.polled(code, time.Since(sent))
		if code == "" {
			v.Status = got.Status
		}
		t.Reset(every)
	}
	r.rec.finished(v.Status, time.Since(intended))
	if r.hooks != nil {
		r.hooks.terminal(v.ID, v.Status)
	}
}
