// Package httpguard keeps slow and greedy clients from holding the control
// plane's connections and goroutines: read and write deadlines chosen per
// route (Deadlines), and a cap on the connections one client address may hold
// open at once (LimitConns).
//
// Deadlines are set per request with http.ResponseController rather than with
// http.Server's ReadTimeout and WriteTimeout, which are one value for every
// route: what suits a JSON call would cut off a 2 GiB artifact upload, and
// what suits the upload would let a client trickle a JSON body for an hour.
// The server keeps ReadHeaderTimeout (headers and TLS handshake) and
// IdleTimeout (between requests); everything after the headers is here.
package httpguard

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/controlplane/ids"
)

// ErrBodyTimeout is what reading a request body returns once its read
// deadline has passed (it wraps os.ErrDeadlineExceeded as well).
var ErrBodyTimeout = errors.New("the request body did not arrive before its deadline")

// Budget is how long one request may take on the wire.
type Budget struct {
	// Read bounds the arrival of the request body, counted from when the
	// handler starts (the headers are in). Once the body has been read to its
	// end the deadline is lifted, so a handler that then waits (a long poll)
	// is not cut off. 0: no deadline.
	Read time.Duration
	// Write bounds sending the response, counted from its first byte, so the
	// time a handler takes to compute it (a long poll, a commit) does not
	// count. 0: no deadline.
	Write time.Duration
}

// Deadlines applies a Budget to every request of a listener. Wrap the
// listener's whole handler with it, outside everything else, so that it sees
// every request, forwarded ones included.
//
// A body that does not arrive in time ends the request with 408
// request_timeout in the contract's envelope (retryable; nothing the handler
// wrote is sent, so nothing is half-written) and the connection is closed, as
// the rest of the body may still be on the wire. When the handler had already
// begun its answer, the connection is only closed.
type Deadlines struct {
	// Pick chooses the budget of a request, by its method and path.
	Pick func(*http.Request) Budget
	// Logger receives a line per body that timed out; nil: slog.Default().
	Logger *slog.Logger
	// Name is the listener's name in those lines.
	Name string

	timeouts atomic.Uint64
}

// Timeouts is how many request bodies have timed out so far.
func (d *Deadlines) Timeouts() uint64 { return d.timeouts.Load() }

// Wrap returns next guarded by the deadlines.
func (d *Deadlines) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := d.Pick(r)
		rc := http.NewResponseController(w)
		g := &guardedWriter{ResponseWriter: w, rc: rc, budget: b, req: r}
		// A deadline left from the previous request on this connection must
		// not cut this one; the cap also bounds a 100 Continue.
		if rc.SetWriteDeadline(deadline(b.Read+b.Write)) != nil {
			next.ServeHTTP(w, r) // not a real connection (a recorder): nothing to guard
			return
		}
		if b.Read > 0 && r.Body != nil && r.Body != http.NoBody {
			if err := rc.SetReadDeadline(time.Now().Add(b.Read)); err == nil {
				g.body = &guardedBody{ReadCloser: r.Body, rc: rc}
				// On a copy: net/http decides after the handler whether to
				// drain what is left of the body by the type of the
				// request's own Body, so that one stays the server's.
				r = r.WithContext(r.Context())
				r.Body = g.body
			}
		}
		next.ServeHTTP(g, r)
		if !g.started {
			if g.timedOut() {
				g.refuse()
			} else {
				g.armWrite() // net/http writes the implicit answer after we return
			}
		}
		if g.refused {
			d.timeouts.Add(1)
			log := d.Logger
			if log == nil {
				log = slog.Default()
			}
			log.Warn("request body too slow: answered 408 and closed the connection", "listener", d.Name,
				"request_id", g.Header().Get("X-Request-Id"), "method", r.Method, "path", r.URL.Path,
				"remote", r.RemoteAddr, "read_timeout", b.Read.String())
		}
	})
}

// deadline is now+d, or no deadline for d = 0.
func deadline(d time.Duration) time.Time {
	if d <= 0 {
		return time.Time{}
	}
	return time.Now().Add(d)
}

// guardedBody notes a read deadline that passed and lifts the deadline once
// the body has been read to its end.
type guardedBody struct {
	io.ReadCloser
	rc       *http.ResponseController
	timedOut atomic.Bool // read from the handler; Read may run elsewhere (a proxy's transport)
}

func (b *guardedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	switch {
	case err == io.EOF:
		// net/http now watches the connection for a hang-up with a read of
		// its own; a deadline left on it would end that read and cancel the
		// request (a long poll). net/http lifts it too; this does not rely on it.
		_ = b.rc.SetReadDeadline(time.Time{})
	case errors.Is(err, os.ErrDeadlineExceeded):
		b.timedOut.Store(true)
		err = fmt.Errorf("%w: %w", ErrBodyTimeout, err)
	}
	return n, err
}

// guardedWriter arms the write deadline at the answer's first byte, and
// replaces the answer with a 408 when the body timed out before it began.
type guardedWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	req     *http.Request
	budget  Budget
	body    *guardedBody // nil: no body, or no read deadline
	started bool         // the status line is decided
	refused bool         // the answer is the 408; the handler's is dropped
}

func (g *guardedWriter) timedOut() bool { return g.body != nil && g.body.timedOut.Load() }

func (g *guardedWriter) armWrite() { _ = g.rc.SetWriteDeadline(deadline(g.budget.Write)) }

// WriteHeader starts the answer, or the 408 in its place.
func (g *guardedWriter) WriteHeader(code int) {
	switch {
	case g.refused:
		return
	case g.started || code < http.StatusOK: // informational answers leave the real one to come
		g.ResponseWriter.WriteHeader(code)
		return
	}
	g.started = true
	if g.timedOut() {
		g.refuse()
		return
	}
	g.armWrite()
	g.ResponseWriter.WriteHeader(code)
}

func (g *guardedWriter) Write(p []byte) (int, error) {
	if !g.started {
		g.WriteHeader(http.StatusOK)
	}
	if g.refused {
		return 0, ErrBodyTimeout
	}
	return g.ResponseWriter.Write(p)
}

// ReadFrom keeps sendfile for files served through the guard.
func (g *guardedWriter) ReadFrom(src io.Reader) (int64, error) {
	if !g.started {
		g.WriteHeader(http.StatusOK)
	}
	if g.refused {
		return 0, ErrBodyTimeout
	}
	return io.Copy(g.ResponseWriter, src)
}

// FlushError flushes what was written (http.ResponseController calls it).
func (g *guardedWriter) FlushError() error {
	if !g.started {
		g.WriteHeader(http.StatusOK)
	}
	if g.refused {
		return ErrBodyTimeout
	}
	return g.rc.Flush()
}

// Flush is FlushError for callers that want an http.Flusher.
func (g *guardedWriter) Flush() { _ = g.FlushError() }

// Unwrap lets http.ResponseController reach the connection.
func (g *guardedWriter) Unwrap() http.ResponseWriter { return g.ResponseWriter }

// refuse answers 408 request_timeout instead of whatever the handler meant to.
func (g *guardedWriter) refuse() {
	g.started, g.refused = true, true
	h := g.ResponseWriter.Header()
	id := h.Get("X-Request-Id") // set by the handler's own middleware, when it got that far
	if id == "" {
		id = ids.New("req")
	}
	clear(h) // the handler's Content-Length, Location… belong to an answer not sent
	h.Set("X-Request-Id", id)
	h.Set("Connection", "close") // the rest of the body may still be on the wire
	secs := max(1, int(g.budget.Read/time.Second))
	e := apierr.New(http.StatusRequestTimeout, apierr.CodeRequestTimeout,
		fmt.Sprintf("the request body did not arrive within %s; nothing was done: send it again, without pauses", g.budget.Read)).
		With("timeout_seconds", secs)
	e.Retryable = true
	g.armWrite()
	apierr.Write(g.ResponseWriter, g.req.WithContext(apierr.WithRequestID(g.req.Context(), id)), e)
}
