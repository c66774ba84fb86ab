package agent

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/scheduler/wire"
)

// fakeCP is a control plane's agent listener for the agent's tests: it
// speaks the protocol of scheduler/wire over real HTTP, hands out the
// assignments a test queues with fenced tokens, keeps blobs in memory,
// enforces the blob key rule and records every call. Its function fields,
// when set, change what it answers.
type fakeCP struct {
	// RegisterStatus, when set, may refuse the n-th registration (from 1)
	// with a status; 0 accepts it.
	RegisterStatus func(n int) int
	// Stale, when set, names extra task ids to call stale in a heartbeat's
	// answer, besides the leases the fake no longer holds.
	Stale func(req wire.HeartbeatRequest) []string
	// NoModelsRoute makes the fake a control plane from before
	// PUT /agent/v1/models (and /capacity): 404, so the agent registers
	// again instead.
	NoModelsRoute bool
	// NoCapacityRoute makes it one from before PUT /agent/v1/capacity: the
	// agent sends a models-only change to /models and registers again for
	// the rest.
	NoCapacityRoute bool
	// AfterComplete, when set, runs once a complete report is taken and
	// before it is answered: the lease is already gone, so a heartbeat in
	// the meantime names it stale, as the real control plane's may.
	AfterComplete func(id string)
	// LeaseSeconds is the lease length registrations announce; 0 is 30.
	LeaseSeconds int
	// Outage, when set, is asked about every request: true makes the fake
	// a control plane that is down (restarting, electing a leader), which
	// answers 503 or, every other time, drops the connection unanswered.
	Outage func(r *http.Request) bool

	srv   *httptest.Server
	token string
	// ended, when set, is sent the id of every task reported complete or
	// failed (under mu: give it room).
	ended chan string

	mu            sync.Mutex
	changed       chan struct{} // closed and replaced when the queue grows
	creds         map[string]string
	nextToken     uint64
	queue         []wire.Assignment
	held          map[string]wire.Assignment // task id → the lease the node holds
	blobs         map[string][]byte
	registrations []wire.RegisterRequest
	// adverts are the models the node advertised, in order: by accepted
	// registrations and by PUT /agent/v1/models and /capacity.
	adverts []wire.ModelsUpdate
	// inPlace counts the accepted PUT /agent/v1/models and /capacity;
	// capacities are the bodies of the latter.
	inPlace      int
	capacities   []wire.CapacityUpdate
	heartbeats   []wire.HeartbeatRequest
	leaseAsks    int
	leased       []string // task ids handed out, in order
	progress     []wire.ProgressRequest
	completes    map[string]wire.CompleteRequest
	fails        map[string]wire.FailRequest
	refused      []string // "complete <task id>": reports refused as stale
	deregistered int
	// maintenance is what heartbeat answers say an operator made of the
	// node (its Maintenance, DrainDeadline, MaintenanceReason).
	maintenance wire.HeartbeatResponse
}

func newFakeCP(t testing.TB) *fakeCP {
	f := &fakeCP{
		token:     "agent-token",
		changed:   make(chan struct{}),
		creds:     map[string]string{},
		held:      map[string]wire.Assignment{},
		blobs:     map[string][]byte{},
		completes: map[string]wire.CompleteRequest{},
		fails:     map[string]wire.FailRequest{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /agent/v1/register", f.register)
	mux.HandleFunc("POST /agent/v1/heartbeat", f.authed(f.heartbeat))
	mux.HandleFunc("POST /agent/v1/lease", f.authed(f.lease))
	mux.HandleFunc("POST /agent/v1/tasks/{id}/{what}", f.authed(f.report))
	mux.HandleFunc("POST /agent/v1/deregister", f.authed(f.deregister))
	mux.HandleFunc("PUT /agent/v1/models", f.authed(f.setModels))
	mux.HandleFunc("PUT /agent/v1/capacity", f.authed(f.setCapacity))
	mux.HandleFunc("PUT /agent/v1/blobs/{key...}", f.authed(f.putBlob))
	mux.HandleFunc("GET /agent/v1/blobs/{key...}", f.authed(f.getBlob))
	var dropped atomic.Int64
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f.Outage == nil || !f.Outage(r) {
			mux.ServeHTTP(w, r)
			return
		}
		if dropped.Add(1)%2 == 0 {
			apiErr(w, http.StatusServiceUnavailable, "unavailable", "no leader")
			return
		}
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeCP) URL() string { return f.srv.URL }

// apiErr writes the API's error envelope.
func apiErr(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": code, "message": msg}})
}

func writeJSONBody(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func bearer(r *http.Request) string {
	return strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
}

// authed checks the credential: 401 when the fake does not know it.
func (f *fakeCP) authed(h func(w http.ResponseWriter, r *http.Request, node string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		node, ok := f.creds[bearer(r)]
		f.mu.Unlock()
		if !ok {
			apiErr(w, http.StatusUnauthorized, "unauthorized", "unknown credential")
			return
		}
		h(w, r, node)
	}
}

func (f *fakeCP) register(w http.ResponseWriter, r *http.Request) {
	var req wire.RegisterRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		apiErr(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	f.mu.Lock()
	f.registrations = append(f.registrations, req)
	n := len(f.registrations)
	f.mu.Unlock()
	if bearer(r) != f.token {
		apiErr(w, http.StatusUnauthorized, "unauthorized", "unknown agent token")
		return
	}
	if f.RegisterStatus != nil {
		if status := f.RegisterStatus(n); status != 0 {
			apiErr(w, status, "internal_error", "not now")
			return
		}
	}
	f.mu.Lock()
	// Registering under a name replaces the old node: its credentials go
	// and its leases are handed back.
	for c, node := range f.creds {
		if node == req.Name {
			delete(f.creds, c)
		}
	}
	clear(f.held)
	cred := fmt.Sprintf("cred-%d", n)
	f.creds[cred] = req.Name
	f.adverts = append(f.adverts, wire.ModelsUpdate{Models: req.Capacity.Models, WarmModels: req.Capacity.WarmModels})
	f.mu.Unlock()
	lease := cmp.Or(f.LeaseSeconds, 30)
	writeJSONBody(w, http.StatusCreated, wire.RegisterResponse{NodeID: "node-" + req.Name, Credential: cred, LeaseSeconds: lease, HeartbeatSeconds: 5})
}

func (f *fakeCP) setModels(w http.ResponseWriter, r *http.Request, _ string) {
	if f.NoModelsRoute {
		apiErr(w, http.StatusNotFound, "not_found", "no agent endpoint PUT /agent/v1/models")
		return
	}
	var req wire.ModelsUpdate
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		apiErr(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	f.mu.Lock()
	f.adverts = append(f.adverts, req)
	f.inPlace++
	f.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (f *fakeCP) setCapacity(w http.ResponseWriter, r *http.Request, _ string) {
	if f.NoModelsRoute || f.NoCapacityRoute {
		apiErr(w, http.StatusNotFound, "not_found", "no agent endpoint PUT /agent/v1/capacity")
		return
	}
	var req wire.CapacityUpdate
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		apiErr(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	f.mu.Lock()
	f.adverts = append(f.adverts, wire.ModelsUpdate{Models: req.Models, WarmModels: req.WarmModels})
	f.capacities = append(f.capacities, req)
	f.inPlace++
	f.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (f *fakeCP) heartbeat(w http.ResponseWriter, r *http.Request, _ string) {
	var req wire.HeartbeatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		apiErr(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	f.mu.Lock()
	resp := f.maintenance
	f.heartbeats = append(f.heartbeats, req)
	for _, l := range req.Leases {
		if h, ok := f.held[l.TaskID]; !ok || h.Token != l.Token {
			resp.Stale = append(resp.Stale, l.TaskID)
		}
	}
	f.mu.Unlock()
	if f.Stale != nil {
		resp.Stale = append(resp.Stale, f.Stale(req)...)
	}
	writeJSONBody(w, http.StatusOK, resp)
}

func (f *fakeCP) lease(w http.ResponseWriter, r *http.Request, _ string) {
	wait, err := strconv.Atoi(r.URL.Query().Get("wait"))
	if err != nil || wait < 1 {
		apiErr(w, http.StatusBadRequest, "invalid_request", "wait must be a positive number of seconds")
		return
	}
	// Reading the body to its end lets the server notice a client that
	// hangs up (it cancels r.Context()).
	_, _ = io.Copy(io.Discard, r.Body)
	// Hold the request as the real listener does, but never long enough to
	// slow a test's server shutdown.
	timeout := time.NewTimer(min(time.Duration(wait)*time.Second, 500*time.Millisecond))
	defer timeout.Stop()
	f.mu.Lock()
	f.leaseAsks++
	f.mu.Unlock()
	for {
		f.mu.Lock()
		// Like the real listener, which places for the node on every try: a
		// credential forgotten while the poll waited gets no task.
		if _, known := f.creds[bearer(r)]; !known {
			f.mu.Unlock()
			apiErr(w, http.StatusUnauthorized, "unauthorized", "unknown credential")
			return
		}
		if len(f.queue) > 0 {
			a := f.queue[0]
			f.queue = f.queue[1:]
			f.nextToken++
			a.Token = f.nextToken
			a.Attempt++
			a.Deadline = time.Now().Add(30 * time.Second)
			f.held[a.TaskID] = a
			f.leased = append(f.leased, a.TaskID)
			f.mu.Unlock()
			writeJSONBody(w, http.StatusOK, a)
			return
		}
		changed := f.changed
		f.mu.Unlock()
		select {
		case <-changed:
		case <-timeout.C:
			w.WriteHeader(http.StatusNoContent)
			return
		case <-r.Context().Done():
			return
		}
	}
}

func (f *fakeCP) report(w http.ResponseWriter, r *http.Request, _ string) {
	id, what := r.PathValue("id"), r.PathValue("what")
	var body struct {
		wire.CompleteRequest
		Percent float64 `json:"percent"`
		Reason  string  `json:"reason"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		apiErr(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	if !f.takeReport(w, id, what, body.CompleteRequest, body.Percent, body.Reason) {
		return
	}
	if what == "complete" && f.AfterComplete != nil {
		f.AfterComplete(id)
	}
	w.WriteHeader(http.StatusNoContent)
}

// takeReport records a report, or answers why it is refused and says so.
func (f *fakeCP) takeReport(w http.ResponseWriter, id, what string, c wire.CompleteRequest, percent float64, reason string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	h, ok := f.held[id]
	if !ok || h.Token != c.Token {
		f.refused = append(f.refused, what+" "+id)
		apiErr(w, http.StatusConflict, wire.CodeStaleLease, "this node no longer holds that lease")
		return false
	}
	switch what {
	case "progress":
		f.progress = append(f.progress, wire.ProgressRequest{Token: c.Token, Percent: percent})
	case "complete":
		delete(f.held, id)
		f.completes[id] = c
		f.notifyEnded(id)
	case "fail":
		delete(f.held, id)
		f.fails[id] = wire.FailRequest{Token: c.Token, Reason: reason}
		f.notifyEnded(id)
	default:
		apiErr(w, http.StatusNotFound, "not_found", "no such report")
		return false
	}
	return true
}

func (f *fakeCP) deregister(w http.ResponseWriter, r *http.Request, node string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deregistered++
	for c, n := range f.creds {
		if n == node {
			delete(f.creds, c)
		}
	}
	clear(f.held) // handed back, not failed
	w.WriteHeader(http.StatusNoContent)
}

// putBlob enforces the key rule: videos/<video id>/<task name>/<file> of a
// lease the node holds.
func (f *fakeCP) putBlob(w http.ResponseWriter, r *http.Request, _ string) {
	key := r.PathValue("key")
	parts := strings.Split(key, "/")
	f.mu.Lock()
	allowed := false
	for _, a := range f.held {
		if len(parts) == 4 && parts[0] == "videos" && parts[1] == a.Video.ID && parts[2] == a.Name && parts[3] != "" {
			allowed = true
		}
	}
	f.mu.Unlock()
	if !allowed {
		apiErr(w, http.StatusForbidden, "forbidden", "key "+key+" is not videos/<video>/<task>/<file> of a held lease")
		return
	}
	data, err := io.ReadAll(r.Body)
	if err != nil {
		apiErr(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	f.mu.Lock()
	f.blobs[key] = data
	f.mu.Unlock()
	w.WriteHeader(http.StatusCreated)
}

func (f *fakeCP) getBlob(w http.ResponseWriter, r *http.Request, _ string) {
	f.mu.Lock()
	data, ok := f.blobs[r.PathValue("key")]
	f.mu.Unlock()
	if !ok {
		apiErr(w, http.StatusNotFound, "not_found", "no such blob")
		return
	}
	_, _ = w.Write(data)
}

func (f *fakeCP) notifyEnded(id string) {
	if f.ended != nil {
		f.ended <- id
	}
}

// enqueue makes assignments available to lease.
func (f *fakeCP) enqueue(as ...wire.Assignment) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queue = append(f.queue, as...)
	close(f.changed)
	f.changed = make(chan struct{})
}

// expire takes a lease away from the node, as an expiry or a failed video
// does: its next heartbeat hears that the lease is stale.
func (f *fakeCP) expire(taskID string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.held, taskID)
}

// forget drops every credential, as a control plane that lost the node
// does: the next call gets 401.
func (f *fakeCP) forget() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.creds)
}

func (f *fakeCP) complete(id string) (wire.CompleteRequest, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.completes[id]
	return c, ok
}

func (f *fakeCP) failed(id string) (wire.FailRequest, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.fails[id]
	return c, ok
}

func (f *fakeCP) blob(key string) []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.blobs[key]
}

// snapshot returns a copy of the recorded calls.
func (f *fakeCP) snapshot() fakeRecord {
	f.mu.Lock()
	defer f.mu.Unlock()
	return fakeRecord{
		registrations: append([]wire.RegisterRequest(nil), f.registrations...),
		adverts:       append([]wire.ModelsUpdate(nil), f.adverts...),
		inPlace:       f.inPlace,
		capacities:    append([]wire.CapacityUpdate(nil), f.capacities...),
		heartbeats:    append([]wire.HeartbeatRequest(nil), f.heartbeats...),
		leaseAsks:     f.leaseAsks,
		leased:        append([]string(nil), f.leased...),
		queued:        len(f.queue),
		progress:      append([]wire.ProgressRequest(nil), f.progress...),
		completes:     maps.Clone(f.completes),
		fails:         maps.Clone(f.fails),
		refused:       append([]string(nil), f.refused...),
		deregistered:  f.deregistered,
		held:          len(f.held),
	}
}

type fakeRecord struct {
	registrations []wire.RegisterRequest
	adverts       []wire.ModelsUpdate
	inPlace       int
	capacities    []wire.CapacityUpdate
	heartbeats    []wire.HeartbeatRequest
	leaseAsks     int
	leased        []string
	queued        int
	progress      []wire.ProgressRequest
	completes     map[string]wire.CompleteRequest
	fails         map[string]wire.FailRequest
	refused       []string
	deregistered  int
	held          int
}

// inputsOf turns a completed task's artifacts into Assignment.Inputs
// entries ("<task>/<file>" → key), added to into.
func inputsOf(into map[string]string, taskName string, c wire.CompleteRequest) map[string]string {
	if into == nil {
		into = map[string]string{}
	}
	for file, key := range c.Artifacts {
		into[taskName+"/"+file] = key
	}
	return into
}

// setMaintenance makes the next heartbeat answers carry an operator's mark
// (state "" for none), as the control plane's do.
func (f *fakeCP) setMaintenance(state string, deadline *time.Time, reason string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.maintenance = wire.HeartbeatResponse{Maintenance: state, DrainDeadline: deadline, MaintenanceReason: reason}
}
