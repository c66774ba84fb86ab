//go:build unix

package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/admin"
	"github.com/vidfarm/vidfarm/controlplane/api"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/controlplane/server"
)

// BenchmarkVideoEventStreams holds 10,000 event streams open on one node and
// measures what a stream costs the node (heap and goroutine stacks, divided
// by the streams) and the latency from a change being applied to its event
// arriving at the client (p50, p99), while changes are made by 8 concurrent
// clients. The streams' clients run in a child process (this test binary,
// TestEventStreamClients), so the node's memory is its own and each process
// stays under its open-file limit.
//
// Each video is followed by EVENTS_BENCH_STREAMS/EVENTS_BENCH_VIDEOS streams
// (default 10,000 streams of 10,000 videos: one each). A change is a cancel
// of a queued video, the newest first, so that no other video's queue
// position moves: one change, one event per stream of that video.
//
//	go test -run '^$' -bench VideoEventStreams -benchtime 2000x ./controlplane/server/
func BenchmarkVideoEventStreams(b *testing.B) {
	f := benchStreams(b)
	n := min(b.N, len(f.ids))
	ids := f.ids[len(f.ids)-n:]
	f.ids = f.ids[:len(f.ids)-n]
	b.ResetTimer()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		cancelNewestFirst(b, f.base, f.key, ids)
	}()
	var lat []time.Duration
	for finals := 0; finals < n*f.perVideo; {
		r, ok := <-f.received
		if !ok {
			b.Fatal("the clients stopped")
		}
		f.mu.Lock()
		t0, ok := f.applied[r.index]
		f.mu.Unlock()
		if !ok {
			b.Fatalf("an event at index %d that the node did not record", r.index)
		}
		lat = append(lat, time.Unix(0, r.at).Sub(t0))
		if r.final {
			finals++
		}
	}
	b.StopTimer()
	wg.Wait()
	slices.Sort(lat)
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(f.perStream, "B/stream")
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(len(lat)), "events")
	b.ReportMetric(float64(f.streams), "streams")
}

// streamBench is the benchmark's node, videos and open streams, set up once
// for every run of the benchmark (Go runs it with b.N = 1 first).
type streamBench struct {
	base, key string
	ids       []string // queued videos, in queue order
	streams   int
	perVideo  int
	perStream float64
	received  chan received
	mu        sync.Mutex
	applied   map[uint64]time.Time // when each change was applied, by its Raft index
	// clients is the child's input, held open while this process lives.
	clients io.WriteCloser
}

type received struct {
	index uint64
	at    int64
	final bool
}

var (
	streamBenchOnce sync.Once
	streamBenchSet  *streamBench
)

func benchStreams(b *testing.B) *streamBench {
	streamBenchOnce.Do(func() { streamBenchSet = setUpStreams(b) })
	if streamBenchSet == nil {
		b.Fatal("the set-up failed")
	}
	return streamBenchSet
}

// setUpStreams starts the node (closed when the process exits), creates the
// videos and opens the streams in the child process.
func setUpStreams(b *testing.B) *streamBench {
	streams, videos := envInt("EVENTS_BENCH_STREAMS", 10000), envInt("EVENTS_BENCH_VIDEOS", 10000)
	raiseFileLimit(b)
	cfg := server.Config{
		DataDir: b.TempDir(), NodeID: "n1", Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0",
		RaftListen: "127.0.0.1:0", AdminToken: "bench-admin-token", NoSync: true, RaftTiming: fastRaft,
		Limits: api.Limits{Disabled: true}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		HTTP: server.HTTPLimits{MaxConnsPerIP: -1},
	}
	if dir, err := os.MkdirTemp("", "events-bench"); err == nil {
		cfg.DataDir = dir // b.TempDir goes with the first run
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	srv, err := server.Start(ctx, cfg)
	cancel()
	if err != nil {
		b.Fatal(err)
	}
	f := &streamBench{base: srv.PublicURL(), streams: streams, perVideo: max(streams/videos, 1),
		received: make(chan received, 1024), applied: map[uint64]time.Time{}}
	cl := &admin.Client{Server: "http://" + srv.AdminAddr(), Token: cfg.AdminToken}
	acct, err := cl.CreateAccount(context.Background(), "bench", "max", 1<<40)
	if err != nil {
		b.Fatal(err)
	}
	f.key = acct.APIKey
	f.ids = createVideos(b, f.base, f.key, videos)
	srv.Node.FSM.OnVideoChange(func(c *fsm.Change) {
		f.mu.Lock()
		f.applied[c.Index] = time.Now()
		f.mu.Unlock()
	})

	before := memInUse()
	child := exec.Command(os.Args[0], "-test.run=^TestEventStreamClients$", "-test.v")
	child.Env = append(os.Environ(), "EVENTS_CLIENT_ADDR="+strings.TrimPrefix(f.base, "http://"),
		"EVENTS_CLIENT_KEY="+f.key, "EVENTS_CLIENT_STREAMS="+strconv.Itoa(streams))
	child.Stderr = os.Stderr
	in, err := child.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := child.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := child.Start(); err != nil {
		b.Fatal(err)
	}
	f.clients = in
	// The child reads the ids up to an empty line, then waits for the end
	// of its input: this process's exit closes the pipe and ends it.
	fmt.Fprintf(in, "%s\n\n", strings.Join(f.ids, "\n"))
	ready := make(chan struct{})
	go func() {
		lines := bufio.NewScanner(out)
		for lines.Scan() {
			fl := strings.Fields(lines.Text())
			switch {
			case len(fl) == 1 && fl[0] == "ready":
				close(ready)
			case len(fl) == 4 && fl[0] == "ev":
				idx, _ := strconv.ParseUint(fl[1], 10, 64)
				at, _ := strconv.ParseInt(fl[2], 10, 64)
				f.received <- received{index: idx, at: at, final: fl[3] == "final"}
			default:
				fmt.Fprintln(os.Stderr, "clients:", lines.Text()) // the child's test log
			}
		}
		close(f.received)
	}()
	select {
	case <-ready:
	case <-time.After(3 * time.Minute):
		b.Fatal("the clients did not open their streams in 3 minutes")
	}
	waitFor(b, "every stream is open on the node", func() bool { return gaugeValue(b, srv, "vidfarm_api_event_streams") >= float64(streams) })
	f.perStream = float64(memInUse()-before) / float64(streams)
	return f
}

// TestEventStreamClients is the benchmark's client process: it opens
// EVENTS_CLIENT_STREAMS streams, spread over the video ids on stdin, prints
// "ready" once every one has its first event, then "ev <index> <unix ns>"
// for each later event. It does nothing as an ordinary test.
func TestEventStreamClients(t *testing.T) {
	addr := os.Getenv("EVENTS_CLIENT_ADDR")
	if addr == "" {
		t.Skip("the client process of BenchmarkVideoEventStreams")
	}
	raiseFileLimit(t)
	key := os.Getenv("EVENTS_CLIENT_KEY")
	streams := envInt("EVENTS_CLIENT_STREAMS", 10000)
	in := bufio.NewScanner(os.Stdin)
	var ids []string
	for in.Scan() && in.Text() != "" {
		ids = append(ids, in.Text())
	}
	go func() {
		for in.Scan() {
		}
		os.Exit(0) // the benchmark is over
	}()
	var out sync.Mutex
	w := bufio.NewWriter(os.Stdout)
	var opened sync.WaitGroup
	opened.Add(streams)
	sem := make(chan struct{}, 64) // connect at most 64 at a time
	for i := range streams {
		sem <- struct{}{}
		go func() {
			first := true
			err := readStream(addr, key, ids[i%len(ids)], func(index uint64, final bool) {
				if first {
					first = false
					<-sem
					opened.Done()
					return
				}
				at := time.Now().UnixNano()
				out.Lock()
				kind := "change"
				if final {
					kind = "final"
				}
				fmt.Fprintf(w, "ev %d %d %s\n", index, at, kind)
				w.Flush()
				out.Unlock()
			})
			if err != nil && first {
				t.Errorf("stream %d: %v", i, err)
				<-sem
				opened.Done()
			}
		}()
	}
	opened.Wait()
	out.Lock()
	fmt.Fprintln(w, "ready")
	w.Flush()
	out.Unlock()
	select {} // until the benchmark kills this process
}

// readStream reads one events stream over a bare connection (what a small
// client would hold: a socket and a 4 KiB buffer) and calls got with each
// event's index, and whether the video was canceled.
func readStream(addr, key, id string, got func(index uint64, final bool)) error {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /v1/videos/%s/events HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nAccept: text/event-stream\r\n\r\n", id, addr, key)
	r := bufio.NewReaderSize(conn, 4096)
	status, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.Contains(status, " 200 ") {
		return fmt.Errorf("answered %q", strings.TrimSpace(status))
	}
	var index uint64
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return err
		}
		if rest, ok := bytes.CutPrefix(line, []byte("id: ")); ok {
			idx, _, _ := bytes.Cut(rest, []byte("-"))
			index, _ = strconv.ParseUint(string(idx), 10, 64)
		}
		if bytes.HasPrefix(line, []byte("data: ")) {
			got(index, bytes.Contains(line, []byte(`"status":"canceled"`)))
		}
	}
}

func createVideos(b *testing.B, base, key string, n int) []string {
	b.Helper()
	ids := make([]string, n)
	var wg sync.WaitGroup
	var failed sync.Once
	body := []byte(`{"mode":"manual","prompt":"a red fox in the snow","duration_seconds":5}`)
	work := make(chan int)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				req, _ := http.NewRequest("POST", base+"/v1/videos", bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+key)
				req.Header.Set("Content-Type", "application/json")
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					failed.Do(func() { b.Error(err) })
					continue
				}
				var v struct{ ID string }
				_ = json.NewDecoder(res.Body).Decode(&v)
				res.Body.Close()
				ids[i] = v.ID
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	// The queue serves in creation order: sort by it, so that canceling
	// from the end moves no other video's position.
	cl := http.Client{}
	slices.SortFunc(ids, func(x, y string) int { return strings.Compare(x, y) })
	order := make(map[string]int64, n)
	for _, id := range ids {
		req, _ := http.NewRequest("GET", base+"/v1/videos/"+id, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		res, err := cl.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		var v struct {
			Progress struct {
				QueuePosition int64 `json:"queue_position"`
			} `json:"progress"`
		}
		_ = json.NewDecoder(res.Body).Decode(&v)
		res.Body.Close()
		order[id] = v.Progress.QueuePosition
	}
	slices.SortFunc(ids, func(x, y string) int { return int(order[x] - order[y]) })
	return ids
}

// cancelNewestFirst cancels ids from the last, 8 at a time.
func cancelNewestFirst(b *testing.B, base, key string, ids []string) {
	work := make(chan string)
	for range 8 {
		go func() {
			for id := range work {
				req, _ := http.NewRequest("POST", base+"/v1/videos/"+id+"/cancel", nil)
				req.Header.Set("Authorization", "Bearer "+key)
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Error(err)
					continue
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
			}
		}()
	}
	for i := len(ids) - 1; i >= 0; i-- {
		work <- ids[i]
	}
	close(work)
}

func memInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}

// gaugeValue reads one unlabelled series from the node's /metrics.
func gaugeValue(b *testing.B, srv *server.Server, name string) float64 {
	req, _ := http.NewRequest("GET", "http://"+srv.AdminAddr()+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer bench-admin-token")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
}

func waitFor(b *testing.B, what string, cond func() bool) {
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			b.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// raiseFileLimit lifts the soft limit on open files to the hard one: each
// stream is a socket.
func raiseFileLimit(tb testing.TB) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		tb.Fatal(err)
	}
	l.Cur = l.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		tb.Fatal(err)
	}
}
