package console

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
)

// transport carries the console's admin client: requests to inProcessHost
// go to the admin handler in this process (forwarding to the leader
// included), others (another member's status) over the network.
type transport struct {
	local  http.Handler
	remote http.RoundTripper
}

func newTransport(local http.Handler, tlsCfg *tls.Config) *transport {
	return &transport{local: local, remote: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
		TLSClientConfig:     tlsCfg,
		TLSHandshakeTimeout: 2 * time.Second,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     90 * time.Second,
	}}
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Host != inProcessHost {
		return t.remote.RoundTrip(req)
	}
	// The handler sees what the listener would give it: a server request
	// from this host, without the console's own routing state (chi would
	// route within it, and two calls at once would share it).
	in := req.Clone(context.WithValue(req.Context(), chi.RouteCtxKey, nil))
	in.RemoteAddr, in.RequestURI, in.Host = "127.0.0.1:0", req.URL.RequestURI(), inProcessHost
	if in.Body == nil {
		in.Body = http.NoBody
	}
	rec := &recorder{header: http.Header{}}
	t.local.ServeHTTP(rec, in)
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	return &http.Response{StatusCode: rec.status, Status: http.StatusText(rec.status), Header: rec.header,
		Body: io.NopCloser(&rec.body), ContentLength: int64(rec.body.Len()), Request: req,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}, nil
}

// recorder is the response writer of an in-process admin call.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(b)
}

// Flush lets the leader's answer stream through the forwarding proxy.
func (r *recorder) Flush() {}
