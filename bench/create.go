package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vidfarm/vidfarm/internal/members"
)

// CreateConfig describes a closed-loop create benchmark.
type CreateConfig struct {
	// BaseURLs are the servers, e.g. http://127.0.0.1:8080, or every member
	// of a cluster: worker i talks to BaseURLs[i mod len], as the etcd put
	// benchmark spreads its clients over etcd's members.
	BaseURLs    []string
	APIKeys     []string // spread over the workers, worker i uses key i mod len
	Concurrency int
	Duration    time.Duration
	// Body is the POST /v1/videos body; nil means a 5 s auto video.
	Body []byte
	// IdempotencyKeys sends a new Idempotency-Key with every create, as a
	// client that retries safely does: the server then keeps a record per
	// create, keyed by the client's (random) key, which a run without keys
	// never shows.
	IdempotencyKeys bool
	// FollowLeader moves each worker as every vidfarm client given the
	// members moves (internal/members): its next creates go to the leader
	// once an answer names it (the X-Vidfarm-Leader header a follower adds
	// to what it forwarded) and the named URL is one of BaseURLs, since the
	// leader serves every request in full and a client that knows the
	// members spares the cluster the follower's hop. Unlike the SDK, a
	// worker whose request fails in transport goes back to its own endpoint
	// (the leader may be gone) rather than on to the next: the workers keep
	// the spread the run started with. Off, every worker stays on
	// BaseURLs[i mod len] and the followers forward.
	FollowLeader bool
	// Progress, when set, is called about once a second with the creates so far.
	Progress func(done int64, elapsed time.Duration)
	Client   *http.Client
}

// CreateReport is what a create benchmark measured.
type CreateReport struct {
	Concurrency int              `json:"concurrency"`
	Elapsed     time.Duration    `json:"elapsed_ns"`
	Requests    int64            `json:"requests"`
	Created     int64            `json:"created"`
	Failures    map[string]int64 `json:"failures"` // by error code or transport error
	PerSecond   float64          `json:"creates_per_second"`
	P50         time.Duration    `json:"p50_ns"`
	P90         time.Duration    `json:"p90_ns"`
	P99         time.Duration    `json:"p99_ns"`
	Max         time.Duration    `json:"max_ns"`
}

// Write prints the report to w, as JSON or as the table String makes: what
// every closed-loop command prints (vidfarm bench create and etcd,
// bench/etcdgrpc), so that their -json outputs stay alike.
func (r CreateReport) Write(w io.Writer, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(r)
	}
	_, err := io.WriteString(w, r.String())
	return err
}

// PutProgress prints a put loop's progress on one line of w, rewritten as
// it goes: what vidfarm bench etcd and bench/etcdgrpc show.
func PutProgress(w io.Writer, d time.Duration) func(done int64, elapsed time.Duration) {
	return func(done int64, el time.Duration) {
		fmt.Fprintf(w, "\r  %5.1fs / %s  %8d puts  %6.0f/s", el.Seconds(), d, done, float64(done)/el.Seconds())
	}
}

// String formats the report as a small table.
func (r CreateReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "clients      %d\n", r.Concurrency)
	fmt.Fprintf(&b, "duration     %s\n", r.Elapsed.Round(time.Millisecond))
	fmt.Fprintf(&b, "requests     %d\n", r.Requests)
	fmt.Fprintf(&b, "created      %d\n", r.Created)
	fmt.Fprintf(&b, "creates/s    %.0f\n", r.PerSecond)
	fmt.Fprintf(&b, "latency p50  %s\n", r.P50.Round(10*time.Microsecond))
	fmt.Fprintf(&b, "latency p90  %s\n", r.P90.Round(10*time.Microsecond))
	fmt.Fprintf(&b, "latency p99  %s\n", r.P99.Round(10*time.Microsecond))
	fmt.Fprintf(&b, "latency max  %s\n", r.Max.Round(10*time.Microsecond))
	codes := make([]string, 0, len(r.Failures))
	for c := range r.Failures {
		codes = append(codes, c)
	}
	slices.Sort(codes)
	for _, c := range codes {
		fmt.Fprintf(&b, "failed       %d × %s\n", r.Failures[c], c)
	}
	return b.String()
}

// DefaultCreateBody is a 5-second auto video: the cheapest create.
var DefaultCreateBody = []byte(`{"mode":"auto","prompt":"A thirty second tour of a solar lantern for campers","duration_seconds":5}`)

// MaxPromptChars is the longest prompt the API takes.
const MaxPromptChars = 5000

// CreateBody is DefaultCreateBody with a prompt of chars characters, its
// own prompt repeated to that length (0: DefaultCreateBody itself): what a
// state keeps per video grows with its prompt, and real ones often run to
// hundreds of characters.
func CreateBody(chars int) ([]byte, error) {
	if chars == 0 {
		return DefaultCreateBody, nil
	}
	if chars < 1 || chars > MaxPromptChars {
		return nil, fmt.Errorf("prompt of %d characters: want 1 to %d", chars, MaxPromptChars)
	}
	const base = "A thirty second tour of a solar lantern for campers. "
	prompt := []byte(strings.Repeat(base, chars/len(base)+1)[:chars])
	if prompt[chars-1] == ' ' {
		prompt[chars-1] = '.' // no trailing blank
	}
	return json.Marshal(map[string]any{"mode": "auto", "prompt": string(prompt), "duration_seconds": 5})
}

// RunCreate runs the benchmark until Duration passes or ctx ends.
func RunCreate(ctx context.Context, cfg CreateConfig) (CreateReport, error) {
	if cfg.Concurrency < 1 || len(cfg.APIKeys) == 0 || cfg.Duration <= 0 || len(cfg.BaseURLs) == 0 {
		return CreateReport{}, errors.New("bench: need concurrency ≥ 1, at least one API key, a server and a duration")
	}
	body := cfg.Body
	if body == nil {
		body = DefaultCreateBody
	}
	client := cfg.Client
	if client == nil {
		client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: cfg.Concurrency, MaxConnsPerHost: cfg.Concurrency}}
	}
	urls := endpointURLs(cfg.BaseURLs, "/v1/videos")
	// Each endpoint as a member, and its create URL made once: a worker's
	// cursor says which member, the map the URL to post to.
	bases := make([]*url.URL, len(cfg.BaseURLs))
	createURL := make(map[*url.URL]string, len(urls))
	for i, b := range cfg.BaseURLs {
		u, err := url.Parse(strings.TrimRight(b, "/"))
		if err != nil {
			return CreateReport{}, fmt.Errorf("bench: server %q: %w", b, err)
		}
		bases[i] = u
		createURL[u] = urls[i]
	}
	// Worker w's own endpoint, its home, is the (w mod n)th.
	sets := make([]*members.Set, len(bases))
	for i := range bases {
		others := slices.Delete(slices.Clone(bases), i, i+1)
		sets[i] = members.NewSet(bases[i], others...)
	}
	cursors := make([]*members.Cursor, cfg.Concurrency)
	for w := range cursors {
		cursors[w] = sets[w%len(sets)].Cursor()
	}
	// Keys of this run only: a key kept from an earlier run would replay
	// its video instead of creating one.
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	var sent atomic.Uint64
	return ClosedLoop(ctx, cfg.Concurrency, cfg.Duration, cfg.Progress, func(ctx context.Context, w int) (string, error) {
		idem := ""
		if cfg.IdempotencyKeys {
			idem = "bench-" + run + "-" + strconv.FormatUint(sent.Add(1), 10)
		}
		cur := cursors[w]
		at := cur.At()
		code, h, err := createOnce(ctx, client, createURL[at], cfg.APIKeys[w%len(cfg.APIKeys)], idem, body)
		switch {
		case !cfg.FollowLeader:
		case err != nil:
			cur.Home()
		default:
			cur.Follow(h)
		}
		return code, err
	}), nil
}

// ClosedLoop runs op from concurrency workers, each issuing the next as soon
// as the last answered, for d or until ctx ends. op answers "" for success,
// a code for a refusal, or a transport error. It is exported for
// bench/etcdgrpc, the gRPC anchor, so that both sides of a comparison are
// timed and summarised by the same code.
func ClosedLoop(ctx context.Context, concurrency int, d time.Duration, progress func(int64, time.Duration), op func(ctx context.Context, worker int) (string, error)) CreateReport {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var created, requests atomic.Int64
	lat := make([][]time.Duration, concurrency)
	fails := make([]map[string]int64, concurrency)
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < concurrency; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			fails[w] = map[string]int64{}
			for ctx.Err() == nil {
				t0 := time.Now()
				code, err := op(ctx, w)
				if ctx.Err() != nil {
					return // the request was cut by the end of the run; don't count it
				}
				requests.Add(1)
				lat[w] = append(lat[w], time.Since(t0))
				switch {
				case err != nil:
					fails[w]["transport: "+err.Error()]++
				case code == "":
					created.Add(1)
				default:
					fails[w][code]++
				}
			}
		}(w)
	}
	if progress != nil {
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		t := time.NewTicker(time.Second)
	loop:
		for {
			select {
			case <-done:
				break loop
			case <-t.C:
				progress(created.Load(), time.Since(start))
			}
		}
		t.Stop()
	}
	wg.Wait()
	elapsed := time.Since(start)
	var all []time.Duration
	rep := CreateReport{Concurrency: concurrency, Elapsed: elapsed, Requests: requests.Load(), Created: created.Load(), Failures: map[string]int64{}}
	for w := range lat {
		all = append(all, lat[w]...)
		for c, n := range fails[w] {
			rep.Failures[c] += n
		}
	}
	slices.Sort(all)
	rep.PerSecond = float64(rep.Created) / elapsed.Seconds()
	rep.P50, rep.P90, rep.P99 = percentile(all, 0.50), percentile(all, 0.90), percentile(all, 0.99)
	if len(all) > 0 {
		rep.Max = all[len(all)-1]
	}
	return rep
}

// percentile reads the q-quantile of sorted durations (nearest rank).
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[nearestRank(len(sorted), q)]
}

// nearestRank is the index of the q-quantile in n > 0 sorted values.
func nearestRank(n int, q float64) int {
	return min(max(int(q*float64(n)+0.5)-1, 0), n-1)
}

// createOnce sends one create, with an Idempotency-Key unless idem is "";
// code is "" on 201, else the error code (or status); h is the answer's
// header, which may name the leader (members.HeaderLeader).
func createOnce(ctx context.Context, c *http.Client, target, key, idem string, body []byte) (code string, h http.Header, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return "", nil, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	if idem != "" {
		req.Header.Set("Idempotency-Key", idem)
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", nil, err
	}
	if resp.StatusCode == http.StatusCreated {
		return "", resp.Header, nil
	}
	var env struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &env) == nil && env.Error.Code != "" {
		return env.Error.Code, resp.Header, nil
	}
	return "http_" + strconv.Itoa(resp.StatusCode), resp.Header, nil
}
