package server_test

import (
	"bufio"
	"fmt"
	"image/color"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/server"
)

// withHTTP sets the listeners' deadlines and connection limit.
func withHTTP(l server.HTTPLimits) option { return func(c *server.Config) { c.HTTP = l } }

// trickle sends a request's head on a new connection to addr, then, in the
// background, its body of size bytes one byte every 20 ms (size×20 ms in all,
// far longer than the deadlines of the tests). answer waits for the reply.
func trickle(t *testing.T, addr, head string, size int) (answer func() (*http.Response, []byte, *bufio.Reader)) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := fmt.Fprintf(c, "%sContent-Length: %d\r\n\r\n", head, size); err != nil {
		t.Fatal(err)
	}
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for range size {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if _, err := c.Write([]byte{'{'}); err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-stopped })
	return func() (*http.Response, []byte, *bufio.Reader) {
		t.Helper()
		_ = c.SetReadDeadline(time.Now().Add(20 * time.Second)) // a broken guard fails instead of hanging
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("no answer to a slow body: %v", err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, raw, br
	}
}

// expectRequestTimeout checks a 408 request_timeout envelope on a connection
// that is then closed. (Not expectAPIError: this 408 is retryable, as nothing
// of the request was done.)
func expectRequestTimeout(t *testing.T, resp *http.Response, raw []byte, br *bufio.Reader) {
	t.Helper()
	r := response{Status: resp.StatusCode, Header: resp.Header, Body: raw}
	if r.Status != http.StatusRequestTimeout || r.errorCode(t) != "request_timeout" {
		t.Fatalf("want 408 request_timeout, got %d: %s", r.Status, raw)
	}
	e := r.json(t)["error"].(map[string]any)
	if id := resp.Header.Get("X-Request-Id"); e["retryable"] != true || e["request_id"] != id || !strings.HasPrefix(id, "req_") ||
		!strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Errorf("408 envelope %v, headers %v", e, resp.Header)
	}
	if _, err := br.ReadByte(); err == nil {
		t.Error("the connection stayed open after the 408")
	}
}

func TestSlowBodiesAreCutOffAtTheirDeadline(t *testing.T) {
	h := start(t, withHTTP(server.HTTPLimits{BodyTimeout: 200 * time.Millisecond, UploadTimeout: 300 * time.Millisecond}))
	_, key := h.account("pro", 1000)
	addr := h.srv.PublicAddr()

	// A JSON body trickled a byte at a time: 408 at the deadline while other
	// clients are served, and no video.
	answer := trickle(t, addr, "POST /v1/videos HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer "+key+"\r\nContent-Type: application/json\r\n", 500)
	for range 5 {
		expectAPIStatus(t, h.do("GET", "/v1/me", key, nil), http.StatusOK)
	}
	resp, raw, br := answer()
	expectRequestTimeout(t, resp, raw, br)
	list := expectAPIStatus(t, h.do("GET", "/v1/videos", key, nil), http.StatusOK)
	if d, _ := list["data"].([]any); len(d) != 0 {
		t.Fatalf("a video came of a body that never arrived: %v", list)
	}

	// An upload trickled in: 408 at the upload deadline, and nothing stored.
	up := expectAPIStatus(t, h.do("POST", "/v1/uploads", key, `{"filename":"boat.png","content_type":"image/png"}`), http.StatusCreated)
	u, err := url.Parse(up["upload_url"].(string))
	if err != nil {
		t.Fatal(err)
	}
	resp, raw, br = trickle(t, addr, "PUT "+u.RequestURI()+" HTTP/1.1\r\nHost: test\r\nContent-Type: image/png\r\n", 4096)()
	expectRequestTimeout(t, resp, raw, br)
	expectAPIError(t, h.get(up["public_url"].(string)), http.StatusNotFound, "not_found")
	// The same upload sent in one piece still works: the upload deadline is
	// for slow clients, not for uploads.
	expectAPIStatus(t, h.put(up["upload_url"].(string), "image/png", pngBytes(t, 64, 32, color.RGBA{200, 30, 30, 255}), false), http.StatusOK)

	metrics := h.adminGet("/metrics")
	if !strings.Contains(metrics, `vidfarm_http_body_timeouts_total{listener="public"} 2`) {
		t.Errorf("metrics lack the two timeouts:\n%s", grepLines(metrics, "vidfarm_http_"))
	}
}

// adminGet GETs an admin path with the admin token and returns the body.
func (h *harness) adminGet(path string) string {
	h.t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+h.srv.AdminAddr()+path, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+h.cfg.AdminToken)
	r := h.send(req)
	if r.Status != http.StatusOK {
		h.t.Fatalf("GET %s: %d %s", path, r.Status, r.Body)
	}
	return string(r.Body)
}

func grepLines(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// openConn opens a kept-alive connection to addr and sends one request on
// it; the error says whether it was served.
func openConn(t *testing.T, addr string) (net.Conn, error) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err // a refusal can reset the connection before the dial returns
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, "GET /v1 HTTP/1.1\r\nHost: test\r\n\r\n"); err != nil {
		return c, err
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return c, err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return c, fmt.Errorf("status %d", resp.StatusCode)
	}
	return c, nil
}

func TestConnectionsPerAddressAreLimited(t *testing.T) {
	h := start(t, withHTTP(server.HTTPLimits{MaxConnsPerIP: 3, ConnLimitExempt: []netip.Prefix{}}))
	addr := h.srv.PublicAddr()
	var conns []net.Conn
	for i := range 3 {
		c, err := openConn(t, addr)
		if err != nil {
			t.Fatalf("connection %d of 3: %v", i+1, err)
		}
		conns = append(conns, c)
	}
	if _, err := openConn(t, addr); err == nil {
		t.Fatal("a fourth connection from 127.0.0.1 was served")
	}
	// One given back makes room again (the server notices the close on its own
	// time: poll).
	conns[0].Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := openConn(t, addr); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no room after a connection was closed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if m := h.adminGet("/metrics"); !strings.Contains(m, "vidfarm_http_connections_refused_total ") ||
		strings.Contains(m, "vidfarm_http_connections_refused_total 0\n") {
		t.Errorf("refusals not counted:\n%s", grepLines(m, "vidfarm_http_"))
	}
}

// By default loopback is exempt: a bench or a proxy on the same host opens as
// many connections as it needs.
func TestLoopbackExemptByDefault(t *testing.T) {
	h := start(t, withHTTP(server.HTTPLimits{MaxConnsPerIP: 2}))
	for i := range 5 {
		if _, err := openConn(t, h.srv.PublicAddr()); err != nil {
			t.Fatalf("loopback connection %d with a limit of 2: %v", i+1, err)
		}
	}
}
