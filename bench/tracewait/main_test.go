package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/trace"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A trace of a real HTTP server whose handlers wait on a channel is read
// into the handlers' line, with their wait named by where it happened.
func TestRunNamesHandlersAndTheirWaits(t *testing.T) {
	release := make(chan struct{})
	var waiting atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		waiting.Add(1)
		<-release
		io.WriteString(w, "ok")
	}))
	defer srv.Close()

	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 4)
	for range 4 {
		go func() {
			resp, err := http.Get(srv.URL)
			if err == nil {
				resp.Body.Close()
			}
			done <- err
		}()
	}
	for waiting.Load() < 4 {
		runtime.Gosched()
	}
	// The wait the trace is to measure: the handlers are all blocked now,
	// and a few milliseconds of it are what the report lists (it leaves out
	// waits under 1 ms).
	time.Sleep(20 * time.Millisecond)
	close(release)
	for range 4 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	trace.Stop()

	path := filepath.Join(t.TempDir(), "trace.out")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := run(path, &out); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^http handlers +running .*waiting +([0-9.]+)(ms|s)\n +waiting +[0-9.]+m?s +chan receive @ .*TestRunNamesHandlersAndTheirWaits`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no handlers' line with their channel wait in:\n%s", out.String())
	}
}

func TestRunRefusesWhatIsNotATrace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x")
	if err := os.WriteFile(path, []byte("not a trace"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := run(path, io.Discard); err == nil {
		t.Fatal("read a file that is not a trace")
	}
}
