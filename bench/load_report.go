package bench

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// LoadReport is what an open-loop run measured. Latencies are in
// milliseconds, time to completed in seconds.
type LoadReport struct {
	Rate     float64 `json:"rate_per_second"`
	Duration float64 `json:"duration_seconds"`
	Elapsed  float64 `json:"elapsed_seconds"` // including the drain
	Sent     int     `json:"sent"`
	Accepted int     `json:"accepted"`
	// Rejected counts the creates not answered 201, by the error
	// envelope's code (or http_NNN; timeout: no answer within a minute;
	// transport: a connection error; cut_off: stopped by the drain or an
	// interrupt). The last three have no latency.
	Rejected map[string]int `json:"rejected"`
	// CreateLatency is from each create's intended send time to its
	// answer, over every answered create; SendLag from the intended to the
	// actual send (the generator falling behind shows here).
	CreateLatency LatencyStats `json:"create_latency_ms"`
	SendLag       LatencyStats `json:"send_lag_ms"`
	// PollLatency is per GET /v1/videos/{id}; PollErrors by code.
	PollLatency LatencyStats   `json:"poll_latency_ms"`
	PollErrors  map[string]int `json:"poll_errors"`
	// Outcomes of the accepted videos: completed, failed, preview, and
	// unfinished (not terminal when the drain ended).
	Outcomes map[string]int `json:"outcomes"`
	// TimeToCompleted is from the intended send time to the poll that saw
	// "completed", so it is late by up to one poll interval.
	TimeToCompleted LatencyStats `json:"time_to_completed_s"`
	// Webhooks is what the receiver saw; nil without one.
	Webhooks *WebhookReport `json:"webhooks,omitempty"`
}

// LatencyStats are percentiles of a histogram (3 significant digits).
type LatencyStats struct {
	Count int64   `json:"count"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p99_9"`
	Max   float64 `json:"max"`
}

// loadRecorder is shared by the request goroutines.
type loadRecorder struct {
	mu                      sync.Mutex
	sentN, accepted         int
	rejected, pollErr, outs map[string]int
	create, lag, poll, ttc  *hdrhistogram.Histogram // microseconds
}

func newHist() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, int64(24*time.Hour/time.Microsecond), 3)
}

func newLoadRecorder() *loadRecorder {
	return &loadRecorder{
		rejected: map[string]int{}, pollErr: map[string]int{}, outs: map[string]int{},
		create: newHist(), lag: newHist(), poll: newHist(), ttc: newHist(),
	}
}

func record(h *hdrhistogram.Histogram, d time.Duration) {
	_ = h.RecordValue(max(d.Microseconds(), 1)) // past the range: the histogram refuses; a day is the bound
}

func (l *loadRecorder) sent(lag time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sentN++
	record(l.lag, lag)
}

func (l *loadRecorder) created(code string, latency time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if code == "" {
		l.accepted++
	} else {
		l.rejected[code]++
	}
	if code != "cut_off" && code != "transport" && code != "timeout" {
		record(l.create, latency)
	}
}

func (l *loadRecorder) polled(code string, latency time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if code != "" {
		l.pollErr[code]++
	}
	record(l.poll, latency)
}

func (l *loadRecorder) finished(status string, since time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.outs[status]++
	if status == "completed" {
		record(l.ttc, since)
	}
}

func (l *loadRecorder) progress(el time.Duration) LoadProgress {
	l.mu.Lock()
	defer l.mu.Unlock()
	rej := 0
	for _, n := range l.rejected {
		rej += n
	}
	done := 0
	for _, n := range l.outs {
		done += n
	}
	return LoadProgress{
		Elapsed: el, Sent: l.sentN, Accepted: l.accepted, Rejected: rej,
		Completed: l.outs["completed"], Failed: l.outs["failed"], InProgress: l.accepted - done,
	}
}

func stats(h *hdrhistogram.Histogram, unit time.Duration) LatencyStats {
	if h.TotalCount() == 0 {
		return LatencyStats{}
	}
	f := float64(unit / time.Microsecond)
	q := func(p float64) float64 { return float64(h.ValueAtQuantile(p)) / f }
	return LatencyStats{Count: h.TotalCount(), Mean: h.Mean() / f, P50: q(50), P90: q(90), P99: q(99), P999: q(99.9), Max: float64(h.Max()) / f}
}

func (l *loadRecorder) report(cfg LoadConfig, elapsed time.Duration) LoadReport {
	l.mu.Lock()
	defer l.mu.Unlock()
	return LoadReport{
		Rate: cfg.Rate, Duration: cfg.Duration.Seconds(), Elapsed: elapsed.Seconds(),
		Sent: l.sentN, Accepted: l.accepted, Rejected: maps.Clone(l.rejected),
		CreateLatency: stats(l.create, time.Millisecond), SendLag: stats(l.lag, time.Millisecond),
		PollLatency: stats(l.poll, time.Millisecond), PollErrors: maps.Clone(l.pollErr),
		Outcomes: maps.Clone(l.outs), TimeToCompleted: stats(l.ttc, time.Second),
	}
}

// String renders the report as a small table.
func (r LoadReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "open loop: %.2f creates/s for %.1f s (%.1f s in all, polling included)\n", r.Rate, r.Duration, r.Elapsed)
	fmt.Fprintf(&b, "sent %d, accepted %d (201)\n", r.Sent, r.Accepted)
	for _, c := range slices.Sorted(maps.Keys(r.Rejected)) {
		fmt.Fprintf(&b, "rejected %d x %s\n", r.Rejected[c], c)
	}
	fmt.Fprintf(&b, "\n%-34s %8s %9s %9s %9s %9s %9s %9s\n", "", "count", "mean", "p50", "p90", "p99", "p99.9", "max")
	row := func(name string, s LatencyStats) {
		fmt.Fprintf(&b, "%-34s %8d %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f\n", name, s.Count, s.Mean, s.P50, s.P90, s.P99, s.P999, s.Max)
	}
	row("create latency, ms (from intended)", r.CreateLatency)
	row("send lag, ms", r.SendLag)
	row("poll latency, ms", r.PollLatency)
	row("time to completed, s", r.TimeToCompleted)
	if w := r.Webhooks; w != nil {
		row("time to webhook, s", w.TimeToWebhook)
	}
	fmt.Fprintln(&b)
	for _, c := range slices.Sorted(maps.Keys(r.Outcomes)) {
		fmt.Fprintf(&b, "videos %-10s %d\n", c, r.Outcomes[c])
	}
	for _, c := range slices.Sorted(maps.Keys(r.PollErrors)) {
		fmt.Fprintf(&b, "poll errors %d x %s\n", r.PollErrors[c], c)
	}
	if w := r.Webhooks; w != nil {
		fmt.Fprintf(&b, "\nwebhooks at %s: %d deliveries, %d duplicates, %d bad signatures, %d for other videos\n",
			w.URL, w.Deliveries, w.Duplicates, w.BadSignatures, w.Foreign)
		for _, c := range slices.Sorted(maps.Keys(w.Events)) {
			fmt.Fprintf(&b, "events %-16s %d\n", c, w.Events[c])
		}
		for _, c := range slices.Sorted(maps.Keys(w.NotDelivered)) {
			fmt.Fprintf(&b, "polled but not delivered %d x %s\n", w.NotDelivered[c], c)
		}
	}
	return b.String()
}
