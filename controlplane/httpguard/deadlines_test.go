package httpguard_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/controlplane/httpguard"
)

// read is the body deadline of these tests: short, so a test waits little,
// and long enough that a body sent in one piece on loopback always makes it.
const read = 200 * time.Millisecond

// serve runs h behind the deadlines on a loopback port until the test ends.
func serve(t *testing.T, d *httpguard.Deadlines, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	srv := &http.Server{Handler: d.Wrap(h), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

func budget(b httpguard.Budget) *httpguard.Deadlines {
	return &httpguard.Deadlines{Name: "test", Pick: func(*http.Request) httpguard.Budget { return b }}
}

// echo reads the whole body and answers its length; a body it cannot read
// gets the 400 a handler of the API would write (with a header of its own,
// to see that none of this answer goes out in place of the 408).
type echo struct {
	mu   sync.Mutex
	errs []error
}

func (e *echo) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Request-Id", "req_test")
	b, err := io.ReadAll(r.Body)
	if err != nil {
		e.mu.Lock()
		e.errs = append(e.errs, err)
		e.mu.Unlock()
		w.Header().Set("X-Handler-Answer", "yes")
		apierr.Write(w, r, apierr.New(http.StatusBadRequest, apierr.CodeInvalidRequest, "could not read request body: "+err.Error()))
		return
	}
	fmt.Fprintf(w, "%d", len(b))
}

func (e *echo) readErrors() []error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]error(nil), e.errs...)
}

func TestSlowBodyIsCutOffWhileOthersAreServed(t *testing.T) {
	h := &echo{}
	d := budget(httpguard.Budget{Read: read, Write: 5 * time.Second})
	addr := serve(t, d, h)

	slow, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	const size = 1000
	started := time.Now()
	if _, err := fmt.Fprintf(slow, "POST /slow HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", size); err != nil {
		t.Fatal(err)
	}
	// One byte every 20 ms: 1000 bytes would take 20 s, a hundred times the deadline.
	stopTrickle := make(chan struct{})
	trickled := make(chan struct{})
	go func() {
		defer close(trickled)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for range size {
			select {
			case <-stopTrickle:
				return
			case <-t.C:
			}
			if _, err := slow.Write([]byte("x")); err != nil {
				return // cut off
			}
		}
	}()
	defer func() { close(stopTrickle); <-trickled }()

	// While the slow body trickles in, ordinary clients are answered.
	client := &http.Client{Timeout: 10 * time.Second}
	for i := range 10 {
		resp, err := client.Post("http://"+addr+"/fast", "application/json", strings.NewReader(`{"n":1}`))
		if err != nil {
			t.Fatalf("fast request %d: %v", i, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(body) != "7" {
			t.Fatalf("fast request %d: %d %s", i, resp.StatusCode, body)
		}
	}

	_ = slow.SetReadDeadline(time.Now().Add(10 * time.Second)) // only so a broken guard fails instead of hanging
	br := bufio.NewReader(slow)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("the slow client got no answer: %v", err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if took := time.Since(started); took < read {
		t.Errorf("cut off after %s, before the %s deadline", took, read)
	}
	if resp.StatusCode != http.StatusRequestTimeout || !resp.Close {
		t.Fatalf("slow body: %d (close %v) %s", resp.StatusCode, resp.Close, raw)
	}
	if resp.Header.Get("X-Handler-Answer") != "" {
		t.Errorf("the handler's own answer leaked into the 408: %v", resp.Header)
	}
	var env struct {
		Error apierr.Error `json:"error"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatalf("not an envelope: %v %s", err, raw)
	}
	if env.Error.Code != apierr.CodeRequestTimeout || !env.Error.Retryable || env.Error.RequestID != "req_test" ||
		resp.Header.Get("X-Request-Id") != "req_test" {
		t.Errorf("envelope %+v, X-Request-Id %q", env.Error, resp.Header.Get("X-Request-Id"))
	}
	// And the connection is closed: the rest of that body is never parsed.
	if n, err := br.Read(make([]byte, 1)); err == nil {
		t.Errorf("the connection stayed open (read %d bytes)", n)
	}
	errs := h.readErrors()
	if len(errs) != 1 || !errors.Is(errs[0], httpguard.ErrBodyTimeout) {
		t.Errorf("handler read errors %v, want one ErrBodyTimeout", errs)
	}
	if d.Timeouts() != 1 {
		t.Errorf("Timeouts() = %d, want 1", d.Timeouts())
	}
}

// A handler that gives up without answering (an upload store that saw its
// context cancelled) still leaves the client a 408, not a bare 200.
func TestSlowBodyWithSilentHandler(t *testing.T) {
	addr := serve(t, budget(httpguard.Budget{Read: read, Write: 5 * time.Second}), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Half the body, then nothing.
	if _, err := io.WriteString(c, "PUT /files/x HTTP/1.1\r\nHost: test\r\nContent-Length: 10\r\n\r\nhalf!"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout || resp.Header.Get("X-Request-Id") == "" {
		t.Fatalf("%d %v", resp.StatusCode, resp.Header)
	}
}

// Once the body is in, the read deadline is lifted: a handler that then waits
// longer than it (a long poll) is neither cancelled nor cut off, and neither is
// one for a request without a body.
func TestDeadlineLiftedAfterTheBody(t *testing.T) {
	addr := serve(t, budget(httpguard.Budget{Read: read, Write: read}), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		select {
		case <-r.Context().Done():
			http.Error(w, "cancelled", http.StatusServiceUnavailable)
		case <-time.After(3 * read): // the wait the test is about: past both deadlines
			_, _ = io.WriteString(w, "waited")
		}
	}))
	client := &http.Client{Timeout: 10 * time.Second}
	for _, method := range []string{http.MethodPost, http.MethodGet} {
		var body io.Reader
		if method == http.MethodPost {
			body = strings.NewReader(`{"wait":1}`)
		}
		req, _ := http.NewRequest(method, "http://"+addr+"/lease", body)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(raw) != "waited" {
			t.Fatalf("%s: %d %s", method, resp.StatusCode, raw)
		}
	}
}

// A client that does not read its answer holds the handler only until the
// write deadline.
func TestWriteDeadlineEndsAnUnreadAnswer(t *testing.T) {
	done := make(chan error, 1)
	addr := serve(t, budget(httpguard.Budget{Read: read, Write: read}), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := make([]byte, 1<<20)
		for range 1 << 10 { // 1 GiB: far more than socket buffers hold
			if _, err := w.Write(chunk); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET /files/big HTTP/1.1\r\nHost: test\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the whole answer went to a client that reads nothing")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the handler is still writing to a client that reads nothing")
	}
}
