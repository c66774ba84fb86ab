// Package console is the operator's console in the browser: /console on the
// admin listener of every control-plane node, embedded in the binary (plain
// HTML, CSS and JavaScript: no CDN, works offline).
//
// It is a front end of the admin API, not a second one. The operator logs in
// with the admin token once; the console keeps the token on the server and
// gives the browser a session cookie (HttpOnly, SameSite=Strict, Secure under
// TLS) instead. Pages show what the admin API shows, built by its own view
// functions (admin.NodeViews, QueueView, VideoView, DeliveriesView) from
// this member's state: a follower answers from its own copy, like
// /metrics, so a member cut off from the leader still shows the farm as it
// last knew it, and every page says which member served it, in which Raft
// state and at which applied index. The Raft view of each member comes from
// that member itself (admin.Client.ClusterStatusAll). Actions (cordon,
// drain, uncordon) are admin API requests, made in-process with the token
// through the same forwarding as a `vidfarm admin` request: on a follower
// they reach the leader.
//
// The farm page shows each GPU's last NVML readings (memory used of total,
// utilisation, temperature, power) from the agents' heartbeats. They are
// kept in the leader's memory only (package telemetry), and a follower's
// farm page says "telemetry on the leader" rather than fetching them from
// it: the page stays one read of this member's own state, which answers
// even when the leader cannot be reached, and the leader does not build
// its node listing a second time for every follower's console poll.
//
// Sessions live in this node's memory: a session is good on the node that
// made it, for SessionTTL at most and IdleTTL without a request, and logout
// ends it at once. State-changing requests (cordon, drain, uncordon, logout)
// carry the session's CSRF token in the X-CSRF-Token header, and a request
// whose Origin or Sec-Fetch-Site says it comes from another site is refused
// before anything else.
//
// Pages update through server-sent events (GET /console/api/events, see
// events.go): the stream sends the page's whole snapshot again when it
// changed, so a lost event heals with the next one, and a reconnect needs
// no resume point. The console is never forwarded, so a stream is served
// by the member the browser reached; each write moves the admin listener's
// write deadline forward. When the stream cannot be had the page polls its
// JSON endpoint every 1.5 s instead. A page build's cost is bounded by
// BenchmarkConsole (1,000 nodes, 100,000 queued tasks).
package console

import (
	"crypto/tls"
	"embed"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/vidfarm/vidfarm/controlplane/admin"
	"github.com/vidfarm/vidfarm/controlplane/api"
	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/controlplane/telemetry"
)

//go:embed static
var static embed.FS

// Defaults of Config.
const (
	DefaultSessionTTL = 12 * time.Hour
	DefaultIdleTTL    = time.Hour
	// MaxSessions bounds the sessions one node keeps; the oldest goes first.
	MaxSessions = 1000
)

// Config wires the console.
type Config struct {
	// Token is the admin token: what the login form must be given, and what
	// the console calls the admin API with.
	Token string
	// Admin is the admin API as this node's listener serves it, forwarding
	// to the leader included.
	Admin http.Handler
	// MemberTLS checks the other members' certificates when the console asks
	// each for its own status (nil: plain http or the system's CAs).
	MemberTLS *tls.Config
	// FSM is this member's state, which the pages are read from.
	FSM *fsm.FSM
	// Secure marks the session cookie Secure: the listener serves TLS.
	Secure bool
	// SessionTTL and IdleTTL bound a session (0: the defaults).
	SessionTTL, IdleTTL time.Duration
	// EventsInterval is how often a live stream rebuilds its page, and
	// EventsHeartbeat how often an idle one sends a comment (0: the
	// defaults).
	EventsInterval, EventsHeartbeat time.Duration
	Now                             func() time.Time
	Logger                          *slog.Logger
	// RateLimitHits says how often this member's API answered an account
	// 429 (nil: the accounts pages show none).
	RateLimitHits func(account string) api.RateLimitHits
	// Registerer takes the console's metrics (nil: not exported).
	Registerer prometheus.Registerer
	// Telemetry is the GPU readings agents' heartbeats brought to this
	// member: the leader's (agent requests are forwarded to it); a
	// follower's holds none.
	Telemetry *telemetry.Store
}

// Console serves /console.
type Console struct {
	cfg      Config
	sessions *sessions
	admin    *admin.Client
	assets   http.Handler
	router   chi.Router
	metrics  *metrics
	throttle *throttle
	stopping chan struct{} // closed by StopStreams
	stopOnce sync.Once
}

// inProcessHost is the host the console's admin client addresses the admin
// handler by; the transport never dials it.
const inProcessHost = "admin.in-process"

// New returns the console.
func New(cfg Config) *Console {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = DefaultSessionTTL
	}
	if cfg.IdleTTL <= 0 {
		cfg.IdleTTL = DefaultIdleTTL
	}
	if cfg.EventsInterval <= 0 {
		cfg.EventsInterval = DefaultEventsInterval
	}
	if cfg.EventsHeartbeat <= 0 {
		cfg.EventsHeartbeat = DefaultEventsHeartbeat
	}
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree is part of the binary
	}
	c := &Console{cfg: cfg, sessions: newSessions(cfg.SessionTTL, cfg.IdleTTL, cfg.Now),
		admin:  &admin.Client{Server: "http://" + inProcessHost, Token: cfg.Token, HTTP: &http.Client{Transport: newTransport(cfg.Admin, cfg.MemberTLS)}},
		assets: http.StripPrefix("/console/static/", http.FileServerFS(sub)), stopping: make(chan struct{})}
	c.metrics = newMetrics(cfg.Registerer, c.sessions)
	c.throttle = newThrottle(cfg.Now)
	c.router = c.routes()
	return c
}

// Handled says whether a request is the console's: the admin listener sends
// it here, and never forwards it (a session belongs to the node that made it).
func Handled(r *http.Request) bool {
	return r.URL.Path == "/console" || strings.HasPrefix(r.URL.Path, "/console/")
}

func (c *Console) routes() chi.Router {
	r := chi.NewRouter()
	r.Use(apierr.RequestIDs, apierr.Recoverer(c.cfg.Logger, "console"), securityHeaders)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		apierr.Write(w, r, apierr.New(http.StatusNotFound, apierr.CodeNotFound, "no console page "+r.URL.Path))
	})
	r.Get("/console", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/console/", http.StatusFound)
	})
	r.Get("/console/", c.index)
	r.Get("/console/static/*", c.assets.ServeHTTP)
	r.With(sameSite).Post("/console/login", c.login)
	r.Group(func(r chi.Router) {
		r.Use(sameSite, c.requireSession)
		r.Get("/console/api/session", c.session)
		r.Get("/console/api/farm", c.farm)
		r.Get("/console/api/queue", c.queue)
		r.Get("/console/api/videos/{id}", c.video)
		r.Get("/console/api/webhooks", c.webhooks)
		r.Get("/console/api/accounts", c.accounts)
		r.Get("/console/api/accounts/{id}", c.account)
		r.Get("/console/api/events", c.events)
		r.Group(func(r chi.Router) {
			r.Use(c.requireCSRF)
			r.Post("/console/logout", c.logout)
			r.Post("/console/api/nodes/{id}/{action}", c.maintain)
		})
	})
	return r
}

// ServeHTTP serves the console.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) { c.router.ServeHTTP(w, r) }

// securityHeaders keep the console's pages out of frames and other sites'
// scripts, and its answers out of caches.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

// index is the one page: the login form without a session, the console with
// one (the script asks /console/api/session which).
func (c *Console) index(w http.ResponseWriter, r *http.Request) {
	b, err := static.ReadFile("static/index.html")
	if err != nil {
		panic(err)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(b)
}
