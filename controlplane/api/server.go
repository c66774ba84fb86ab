// Package api serves the public /v1 API of the contract: authentication, rate
// limits, the error envelope, accounts, the model catalog, the voice catalogue
// (the union of the registered nodes' espeak-ng voices) and speech samples,
// avatars, folders, videos and webhook endpoints. Every write becomes one FSM
// command proposed through the Raft node; reads come from the local FSM.
package api

import (
	"context"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/controlplane/blob"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/controlplane/sealed"
	"github.com/vidfarm/vidfarm/netguard"
)

// Store proposes commands to the replicated state; raftnode.Node is the real one.
type Store interface {
	Apply(ctx context.Context, cmd fsm.Command) (any, error)
}

// Config wires the API to the state, the outside world and its limits.
type Config struct {
	FSM    *fsm.FSM
	Store  Store
	Logger *slog.Logger
	Signer blob.Signer
	// Blobs holds the files signed URLs point at (GET /files/...); nil serves none.
	Blobs  blob.Store
	Limits Limits
	// AppURL is the service's own app, where credits and plans are bought; the
	// links in errors and in GET /v1/me point into it.
	AppURL string
	// Registry receives the API's Prometheus metrics; nil means none.
	Registry prometheus.Registerer
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// AllowPrivateURLs accepts client addresses (video image fields, logo_url,
	// avatar file_url, brand pages) on private, loopback and link-local hosts:
	// the AllowPrivate of the default Guard. A development switch for tests and
	// closed networks; the server logs a warning when it is on.
	AllowPrivateURLs bool
	// WebhookGuard checks webhook addresses at registration; nil means the
	// production policy (public https only).
	WebhookGuard *netguard.Guard
	// Secrets seals the signing secrets of new webhooks before they enter
	// the replicated state; nil keeps them plain.
	Secrets *sealed.Key
	// Guard checks the addresses the farm fetches on a client's behalf: brand
	// pages, and with HTTPSOnly added the addresses render nodes fetch (video
	// image fields, logo_url, avatar file_url). nil means one with
	// AllowPrivate = AllowPrivateURLs and the system resolver.
	Guard *netguard.Guard
	// SecretOverlap is how long a rotated webhook secret keeps signing beside
	// the new one (0: DefaultSecretOverlap).
	SecretOverlap time.Duration
	// SpeechWait bounds how long POST /v1/voices/speech waits for its audio
	// before answering 202 with the sample to poll; 0 means DefaultSpeechWait.
	SpeechWait time.Duration
	// EventsHeartbeat is how often a quiet event stream gets a comment line;
	// 0 means DefaultEventsHeartbeat.
	EventsHeartbeat time.Duration
	// ReadBarrier, when set, is what an event stream waits for before it
	// reads the local state: that this node has applied everything the
	// cluster committed, and at least index (a client's Last-Event-ID).
	// It waits at most readBarrierTimeout. Commands need no such bound
	// here: the node bounds how long a proposal waits
	// (raftnode.DefaultApplyTimeout), with no timer per request.
	ReadBarrier func(ctx context.Context, index uint64) error
	// WorkQueued, when set, is called after a video was queued for rendering, so
	// waiting agents look for work at once (agentapi.Notifier.Notify).
	WorkQueued func()
}

// API is the /v1 HTTP handler.
type API struct {
	cfg      Config
	fsm      *fsm.FSM
	store    Store
	log      *slog.Logger
	lim      *limiters
	metrics  *metrics
	inflight inflight
	router   chi.Router
	// inputGuard is cfg.Guard for addresses render nodes fetch: https only.
	inputGuard *netguard.Guard
	// streamsDone ends every event stream (StopStreams).
	streamsDone chan struct{}
	stopStreams sync.Once
}

// MaxBodyBytes is the contract's body limit: a JSON body of 256 KB or more is refused.
const MaxBodyBytes = 256 * 1024

// New builds the API.
func New(cfg Config) (*API, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.WebhookGuard == nil {
		cfg.WebhookGuard = &netguard.Guard{}
	}
	if cfg.Guard == nil {
		cfg.Guard = &netguard.Guard{AllowPrivate: cfg.AllowPrivateURLs}
	}
	inputGuard := *cfg.Guard
	inputGuard.HTTPSOnly = true
	if cfg.SecretOverlap <= 0 {
		cfg.SecretOverlap = DefaultSecretOverlap
	}
	lim, err := newLimiters(cfg.Limits)
	if err != nil {
		return nil, err
	}
	a := &API{cfg: cfg, fsm: cfg.FSM, store: cfg.Store, log: cfg.Logger, lim: lim, metrics: newMetrics(cfg.Registry), inputGuard: &inputGuard}
	a.inflight.m = map[inflightKey]struct{}{}
	a.streamsDone = make(chan struct{})
	a.router = a.routes()
	return a, nil
}

// workQueued tells waiting agents that a video was queued.
func (a *API) workQueued() {
	if a.cfg.WorkQueued != nil {
		a.cfg.WorkQueued()
	}
}

// ServeHTTP makes the API an http.Handler.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.router.ServeHTTP(w, r) }

// StopStreams ends every open event stream, so that a server shutting down
// does not wait for them (http.Server.RegisterOnShutdown); clients reconnect
// elsewhere with Last-Event-ID.
func (a *API) StopStreams() { a.stopStreams.Do(func() { close(a.streamsDone) }) }

// Close stops the rate limiters' sweepers.
func (a *API) Close() { a.lim.close() }

func (a *API) routes() chi.Router {
	r := chi.NewRouter()
	r.Use(apierr.RequestIDs, apierr.Recoverer(a.log, "public API"), a.observe, a.limitBody, getHead)
	r.NotFound(a.notFound)
	r.MethodNotAllowed(apierr.MethodNotAllowed(r, true))
	r.Get("/", a.root)
	r.Get("/v1", a.root)
	r.Get("/files/previews/{id}.png", a.previewFile)
	r.Get("/files/stock-avatars/{id}.png", a.stockAvatarFile)
	r.Get("/files/*", a.serveFile)
	r.Head("/files/*", a.serveFile)
	r.Put("/files/*", a.putFile)
	r.Group(func(r chi.Router) {
		r.Use(a.authenticate)
		r.Get("/v1/openapi.json", a.openAPI)
		r.Get("/v1/me", a.me)
		r.Get("/v1/models", a.listModels)
		r.Get("/v1/voices", a.listVoices)
		r.Post("/v1/voices/speech", a.createSpeech)
		r.Get("/v1/voices/speech/{id}", a.getSpeech)
		r.Get("/v1/avatars", a.listAvatars)
		r.Post("/v1/avatars", a.createAvatar)
		r.Get("/v1/avatars/{id}", a.getAvatar)
		r.Get("/v1/folders", a.listFolders)
		r.Post("/v1/folders", a.createFolder)
		r.Post("/v1/videos", a.createVideo)
		r.Get("/v1/videos", a.listVideos)
		r.Get("/v1/videos/{id}", a.getVideo)
		r.Get("/v1/videos/{id}/events", a.videoEvents)
		r.Post("/v1/videos/{id}/render", a.renderPreview)
		r.Post("/v1/videos/{id}/cancel", a.cancelVideo)
		r.Get("/v1/events", a.listEvents)
		r.Get("/v1/webhooks", a.listWebhooks)
		r.Post("/v1/webhooks", a.createWebhook)
		r.Delete("/v1/webhooks/{id}", a.deleteWebhook)
		r.Get("/v1/webhooks/{id}/deliveries", a.listWebhookDeliveries)
		r.Post("/v1/webhooks/{id}/deliveries/{delivery_id}/retry", a.retryWebhookDelivery)
		r.Post("/v1/webhooks/{id}/test", a.testWebhook)
		r.Post("/v1/webhooks/{id}/rotate_secret", a.rotateWebhookSecret)
		r.Post("/v1/webhooks/{id}/enable", a.enableWebhook)
		r.Post("/v1/uploads", a.createUpload)
		r.Post("/v1/assets", a.createAsset)
		r.Get("/v1/assets", a.listAssets)
		r.Delete("/v1/assets", a.deleteNamedAsset)
		r.Get("/v1/assets/{id}", a.getAsset)
		r.Delete("/v1/assets/{id}", a.deleteAsset)
		r.Post("/v1/assets/{id}/complete", a.completeAsset)
		r.Get("/v1/brand-kits", a.listBrandKits)
		r.Post("/v1/brand-kits", a.createBrandKit)
		r.Post("/v1/brand-kits/from-url", a.brandKitFromURL)
		r.Delete("/v1/brand-kits/{id:br_[^/]+}", a.deleteBrandKit) // not from-url: its only method is POST
	})
	return r
}

// getHead serves HEAD on every GET route (uptime probes use it) by routing
// it as the GET; a route with a HEAD of its own (GET /files/*) keeps it.
// net/http sends no body for a HEAD, but a handler that streams (GET
// /v1/videos/{id}/events) would keep running for nobody: the request's
// context ends once the header is written, as nothing after it is sent.
func getHead(next http.Handler) http.Handler {
	return middleware.GetHead(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodHead {
			next.ServeHTTP(w, r)
			return
		}
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		next.ServeHTTP(&headWriter{ResponseWriter: w, done: cancel}, r.WithContext(ctx))
	}))
}

// headWriter ends a HEAD request's context when its header is written.
type headWriter struct {
	http.ResponseWriter
	done context.CancelFunc
}

func (h *headWriter) WriteHeader(code int) {
	h.ResponseWriter.WriteHeader(code)
	if code >= 200 {
		h.done()
	}
}

func (h *headWriter) Write(b []byte) (int, error) {
	n, err := h.ResponseWriter.Write(b)
	h.done()
	return n, err
}

func (h *headWriter) Unwrap() http.ResponseWriter { return h.ResponseWriter }

// inflight holds the idempotency keys whose create is being committed on this node.
type inflightKey struct{ account, key string }

type inflight struct {
	mu sync.Mutex
	m  map[inflightKey]struct{}
}

func (f *inflight) acquire(k inflightKey) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, busy := f.m[k]; busy {
		return false
	}
	f.m[k] = struct{}{}
	return true
}

func (f *inflight) release(k inflightKey) {
	f.mu.Lock()
	delete(f.m, k)
	f.mu.Unlock()
}

// routeParam matches a route parameter with a pattern, {id:br_[^/]+}.
var routeParam = regexp.MustCompile(`\{(\w+):[^}]*\}`)

// Routes lists every route the API serves as "METHOD /pattern", sorted.
func (a *API) Routes() []string {
	var out []string
	_ = chi.Walk(a.router, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		out = append(out, method+" "+routeParam.ReplaceAllString(route, "{$1}"))
		return nil
	})
	slices.Sort(out)
	return out
}
