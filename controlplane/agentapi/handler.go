// Package agentapi serves the agent protocol of scheduler/wire on the control
// plane's agent listener: GPU nodes register with the agent token, then, with the
// credential they got, heartbeat, long-poll for leases, report progress, upload
// artifacts to the blob store and complete or fail their tasks. Every change is an
// FSM command proposed through Raft (fsm.RegisterNode ... fsm.DeregisterNode);
// reads come from the local FSM.
//
// Semantics an agent relies on (see scheduler/wire for the endpoints):
//
//   - 401 unauthorized: the agent token (register) or the credential (everything
//     else) is missing or unknown. A node that gets it on a credential call has
//     been deregistered or replaced: register again.
//   - 409 stale_lease: the report is about a lease the node no longer holds; drop
//     the task and never retry the report.
//   - 404 not_found: the task or blob does not exist.
//   - 400 invalid_request: the body or a value in it is malformed; details say which.
//   - 503 (retryable): the control plane is electing a leader; retry with backoff.
//
// A heartbeat may carry GPU telemetry (wire.GPUSample): checked against the
// GPUs the node registered (a bad value is 400 and the heartbeat is not
// applied) and kept in Config.Telemetry, this member's memory, not through
// Raft; a node that deregisters is forgotten there.
//
// The lease long-poll (POST /agent/v1/lease?wait=N) proposes a lease at once; when
// nothing can be placed it waits until a Notifier says work may have changed (a
// video queued, a task finished, leases expired, a node came or went), or a
// second passes, and tries again, until N seconds (default 20, at most 60) are up:
// then 204. A client that hangs up ends the wait.
//
// Credentials are "vfn_" and 256 random bits; only their SHA-256 is replicated
// (fsm.RegisterNode.CredHash), and a call finds its node with
// fsm.FSM.NodeByCredHash.
//
// Blob uploads (PUT /agent/v1/blobs/videos/<video>/<task>/<file>) are accepted only
// from the node that holds the lease of that task, and up to Config.MaxBlobBytes;
// a task completes only once every artifact it names is in the store. One lease
// may store at most 64 files and 3 × MaxBlobBytes in all (413 past either), and
// once the lease ends the files it uploaded that its video (avatar, speech sample)
// does not refer to are deleted (blobs_leases.go). Blob reads (GET, HEAD) are
// served only to a node that is up, and only for the inputs its current leases
// list (wire.Assignment.Inputs) or their own uploads: anything else is 404 whether
// or not it exists, 409 stale_lease for a node marked down.
package agentapi

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/controlplane/blob"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/controlplane/telemetry"
)

// Store proposes commands to the replicated state; raftnode.Node is the real one.
type Store interface {
	Apply(ctx context.Context, cmd fsm.Command) (any, error)
}

// Config wires the agent API.
type Config struct {
	FSM   *fsm.FSM
	Store Store
	Blobs blob.Store
	// Token is the agent registration token. Empty refuses every registration.
	Token string
	// LeaseDuration is how long a lease lasts without a heartbeat (default 30 s);
	// HeartbeatInterval how often agents are told to heartbeat (default 5 s).
	LeaseDuration     time.Duration
	HeartbeatInterval time.Duration
	// RetryBackoff is the base wait before a task that failed on every
	// node able to run it is tried again (scheduler.FailWithBackoff); it
	// doubles with each failure. Zero retries at once.
	RetryBackoff time.Duration
	// Notifier wakes lease long-polls; share it with whatever else queues work (the
	// public API, the leader's lease expiry). Nil means a private one.
	Notifier *Notifier
	Logger   *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// MaxBlobBytes is the largest upload (default 2 GiB).
	MaxBlobBytes int64
	// LeaseRetry is how often a waiting lease poll tries again without being
	// notified (default 1 s): the fallback for changes no Notify announced.
	LeaseRetry time.Duration
	// Waiting, when set, is called each time a lease poll finds no work and starts
	// to wait (for metrics and tests).
	Waiting func()
	// Telemetry takes the GPU samples heartbeats carry (not replicated: see
	// package telemetry); nil drops them after checking them.
	Telemetry *telemetry.Store
	// Registerer takes the agent API's request metrics (nil: not exported).
	Registerer prometheus.Registerer
}

// Defaults of Config.
const (
	DefaultLeaseDuration     = 30 * time.Second
	DefaultHeartbeatInterval = 5 * time.Second
	DefaultMaxBlobBytes      = 2 << 30
	DefaultLeaseRetry        = time.Second
)

// maxJSONBytes bounds the JSON bodies of the protocol.
const maxJSONBytes = 1 << 20

type server struct {
	cfg    Config
	fsm    *fsm.FSM
	log    *slog.Logger
	notify *Notifier
	// registering makes a registration's name check and its apply one
	// step on this member (the leader, which applies them): two agents
	// registering the same name at once would otherwise both pass the
	// check, and the later apply would replace the earlier one's node.
	registering chan struct{} // a slot: a channel, so a wait ends with its request
	metrics     *metrics
	sweeps      sweepMetrics
	// uploads is what the current leases uploaded, while there is any
	// (blobs_leases.go).
	uploads atomic.Pointer[ledger]
}

// Handler returns the agent listener's HTTP handler.
func Handler(cfg Config) http.Handler {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.LeaseDuration <= 0 {
		cfg.LeaseDuration = DefaultLeaseDuration
	}
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if cfg.MaxBlobBytes <= 0 {
		cfg.MaxBlobBytes = DefaultMaxBlobBytes
	}
	if cfg.LeaseRetry <= 0 {
		cfg.LeaseRetry = DefaultLeaseRetry
	}
	if cfg.Notifier == nil {
		cfg.Notifier = NewNotifier()
	}
	s := &server{cfg: cfg, fsm: cfg.FSM, log: cfg.Logger, notify: cfg.Notifier, registering: make(chan struct{}, 1),
		metrics: newMetrics(cfg.Registerer), sweeps: newSweepMetrics(cfg.Registerer)}
	r := chi.NewRouter()
	r.Use(apierr.RequestIDs, s.withInfo, s.observe, apierr.Recoverer(s.log, "agent"))
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		apierr.Write(w, r, apierr.New(http.StatusNotFound, apierr.CodeNotFound,
			fmt.Sprintf("no agent endpoint %s %s; the agent protocol lives under /agent/v1", r.Method, r.URL.Path)))
	})
	r.MethodNotAllowed(apierr.MethodNotAllowed(r, false))
	r.Post("/agent/v1/register", s.register)
	r.Group(func(r chi.Router) {
		r.Use(s.authenticate)
		r.Post("/agent/v1/heartbeat", s.heartbeat)
		r.Post("/agent/v1/lease", s.lease)
		r.Post("/agent/v1/tasks/*", s.taskReport)
		r.Post("/agent/v1/deregister", s.deregister)
		r.Put("/agent/v1/models", s.setModels)
		r.Put("/agent/v1/capacity", s.setCapacity)
		r.Put("/agent/v1/blobs/*", s.putBlob)
		r.Get("/agent/v1/blobs/*", s.getBlob)
		r.Head("/agent/v1/blobs/*", s.getBlob)
	})
	return r
}

// reqInfo is what a request's log line says beyond the basics; handlers fill it in.
type reqInfo struct {
	nodeID string
	taskID string
}

type infoKey struct{}

func info(r *http.Request) *reqInfo {
	if ri, ok := r.Context().Value(infoKey{}).(*reqInfo); ok {
		return ri
	}
	return &reqInfo{}
}

// withInfo gives the request the holder handlers fill for the log line.
func (s *server) withInfo(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), infoKey{}, &reqInfo{})))
	})
}
