package api_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// rawHead sends HEAD path over a bare connection and returns the answer's
// status and header, failing if any byte follows the header.
func rawHead(t *testing.T, e *env, path, key string) (int, http.Header) {
	t.Helper()
	conn, err := net.Dial("tcp", e.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	req := "HEAD " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
	if key != "" {
		req += "Authorization: Bearer " + key + "\r\n"
	}
	if _, err := io.WriteString(conn, req+"\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodHead})
	if err != nil {
		t.Fatalf("HEAD %s: %v", path, err)
	}
	rest, err := io.ReadAll(br) // the server closes after the answer
	if err != nil {
		t.Fatalf("HEAD %s: reading to the close: %v", path, err)
	}
	if len(rest) > 0 {
		t.Errorf("HEAD %s: %d bytes of body sent: %q", path, len(rest), rest)
	}
	return resp.StatusCode, resp.Header
}

// TestHead: HEAD is served for every GET route, as uptime probes send it
// (HEAD /v1 and /v1/me answered 405), with the GET's header and no body; a
// stream's HEAD ends at once instead of following the stream for nobody.
func TestHead(t *testing.T) {
	e := newEnv(t)
	_, key := e.account(fsm.PlanPro, 1000)
	vid := e.create(key, "", `{"mode":"auto","prompt":"a lighthouse"}`).wantStatus(t, http.StatusCreated).json(t)["id"].(string)
	for _, path := range []string{"/v1", "/v1/me", "/v1/models", "/v1/videos", "/v1/videos/" + vid, "/v1/assets", "/v1/openapi.json"} {
		get := e.do(http.MethodGet, path, key, "").wantStatus(t, http.StatusOK)
		status, h := rawHead(t, e, path, key)
		if status != http.StatusOK {
			t.Errorf("HEAD %s: %d, want 200", path, status)
			continue
		}
		if h.Get("Content-Type") != get.Header.Get("Content-Type") {
			t.Errorf("HEAD %s: Content-Type %q, GET's %q", path, h.Get("Content-Type"), get.Header.Get("Content-Type"))
		}
		if path == "/v1" { // a body small enough for net/http to count
			if h.Get("Content-Length") != strconv.Itoa(len(get.Body)) {
				t.Errorf("HEAD %s: Content-Length %q, GET's body is %d bytes", path, h.Get("Content-Length"), len(get.Body))
			}
		}
	}
	// Authentication and not-found answer as for GET.
	if status, _ := rawHead(t, e, "/v1/me", ""); status != http.StatusUnauthorized {
		t.Errorf("HEAD /v1/me without a key: %d, want 401", status)
	}
	if status, _ := rawHead(t, e, "/v1/videos/vid_missing", key); status != http.StatusNotFound {
		t.Errorf("HEAD of a missing video: %d, want 404", status)
	}
	// A route with no GET stays 405.
	if status, h := rawHead(t, e, "/v1/videos/"+vid+"/cancel", key); status != http.StatusMethodNotAllowed || h.Get("Allow") != "POST" {
		t.Errorf("HEAD of a POST route: %d, Allow %q", status, h.Get("Allow"))
	}
	// A 405 on a GET route lists HEAD beside GET (RFC 9110 section 15.5.6:
	// Allow names every method the resource supports).
	if status, h := rawHead(t, e, "/v1/videos/"+vid, key); status != http.StatusOK || h.Get("Allow") != "" {
		t.Errorf("HEAD of a video: %d, Allow %q", status, h.Get("Allow"))
	}
	put := e.do(http.MethodPut, "/v1/videos", key, "")
	if put.Status != http.StatusMethodNotAllowed || put.Header.Get("Allow") != "GET, HEAD, POST" {
		t.Errorf("PUT /v1/videos: %d, Allow %q, want GET, HEAD, POST", put.Status, put.Header.Get("Allow"))
	}
	// The event stream: its header, then the end of the answer (rawHead's
	// deadline fails a stream that goes on).
	status, h := rawHead(t, e, "/v1/videos/"+vid+"/events", key)
	if status != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") {
		t.Errorf("HEAD of the event stream: %d %q", status, h.Get("Content-Type"))
	}
}
