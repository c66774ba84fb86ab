// Package admin is the operator's API on its own listener, guarded by the admin
// token: accounts, keys, credits and plans (how the service's own app drives
// vidfarm), failing a video with a refund, webhook deliveries and their attempts, render nodes and their
// maintenance (cordon, drain, uncordon), snapshots, status and Prometheus metrics.
// Client is its Go client, used by the `vidfarm admin` CLI.
package admin

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/controlplane/ids"
	"github.com/vidfarm/vidfarm/controlplane/raftnode"
	"github.com/vidfarm/vidfarm/controlplane/sealed"
	"github.com/vidfarm/vidfarm/controlplane/telemetry"
	"github.com/vidfarm/vidfarm/scheduler"
	"github.com/vidfarm/vidfarm/textguard"
)

// Node is what the admin API needs of the Raft node.
type Node interface {
	Apply(ctx context.Context, cmd fsm.Command) (any, error)
	Snapshot() error
	Stats() map[string]string
}

// Config wires the admin API.
type Config struct {
	Token    string
	FSM      *fsm.FSM
	Node     Node
	Logger   *slog.Logger
	Gatherer prometheus.Gatherer
	// Registerer takes the admin API's own metrics (nil: not exported).
	Registerer prometheus.Registerer
	Now        func() time.Time
	// AppDB reports the app-database bridge; nil without one.
	AppDB func() any
	// Cluster manages membership; nil leaves the cluster endpoints out.
	Cluster Cluster
	// BenchFill serves POST /admin/v1/bench/fill (bench only; see fsm.BenchFill).
	BenchFill bool
	// Telemetry is the GPU readings agents' heartbeats brought to this
	// member (the node listing shows them); nil: none.
	Telemetry *telemetry.Store
	// DataDir is the node's data directory: a restore spools its upload
	// there, on the disk that has room for the state, not in /tmp ("":
	// the system's temporary directory).
	DataDir string
	// Secrets is the node's --secrets-key (nil: it has none): a restore
	// refuses a backup whose sealed webhook secrets do not open with it.
	Secrets *sealed.Key
	// PeerTLS checks the certificates of the other members' admin
	// listeners (the server's --tls-ca) when a promotion asks a node
	// whether it caught up; nil: the system's CAs.
	PeerTLS *tls.Config
}

type server struct {
	cfg     Config
	metrics *metrics
}

// Handler returns the admin HTTP handler.
func Handler(cfg Config) http.Handler {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &server{cfg: cfg, metrics: newMetrics(cfg.Registerer)}
	r := chi.NewRouter()
	// observe sits outside auth and Recoverer: refused tokens and panics
	// are counted and logged too.
	r.Use(apierr.RequestIDs, s.observe, apierr.Recoverer(cfg.Logger, "admin"))
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		apierr.Write(w, r, apierr.New(http.StatusNotFound, apierr.CodeNotFound, "no admin endpoint "+r.Method+" "+r.URL.Path))
	})
	r.MethodNotAllowed(apierr.MethodNotAllowed(r, false))
	r.Group(func(r chi.Router) {
		r.Use(s.auth)
		r.Handle("/metrics", promhttp.HandlerFor(cfg.Gatherer, promhttp.HandlerOpts{}))
		// Go's profiles of this process (net/http/pprof), as rqlite and Nomad
		// serve them: where a node spends its CPU and memory, read from the
		// running server, without a restart or a debug build.
		r.Mount("/debug", middleware.Profiler())
		r.Post("/admin/v1/accounts", s.createAccount)
		r.Get("/admin/v1/accounts/{id}", s.getAccount)
		r.Post("/admin/v1/accounts/{id}/credits", s.grantCredits)
		r.Put("/admin/v1/accounts/{id}/plan", s.setPlan)
		r.Post("/admin/v1/keys", s.createKey)
		r.Post("/admin/v1/keys/{id}/revoke", s.revokeKey)
		r.Post("/admin/v1/videos/{id}/fail", s.failVideo)
		r.Post("/admin/v1/snapshot", s.snapshot)
		r.Get("/admin/v1/status", s.status)
		r.Get("/admin/v1/webhook-deliveries", s.webhookDeliveries)
		r.Get("/admin/v1/cluster/status", s.clusterStatus)
		r.Post("/admin/v1/accounts/{id}/debits", s.debit)
		s.nodeRoutes(r)
		s.queueRoutes(r)
		r.Get("/admin/v1/history", s.history)
		if cfg.BenchFill {
			r.Post("/admin/v1/bench/fill", s.benchFill)
		}
		if cfg.Cluster != nil {
			r.Post("/admin/v1/cluster/join", s.clusterJoin)
			r.Post("/admin/v1/cluster/remove", s.clusterRemove)
			r.Get("/admin/v1/cluster/members", s.clusterMembers)
			r.Put("/admin/v1/cluster/members/{id}", s.clusterReport)
			r.Get("/admin/v1/backup", s.backup)
			r.Post("/admin/v1/restore", s.restore)
		}
	})
	return r
}

// auth admits a request only with "Authorization: Bearer <admin token>" (the
// scheme in any case, RFC 7235); a bare token is refused like a wrong one.
func (s *server) auth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || s.cfg.Token == "" ||
			subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), []byte(s.cfg.Token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="vidfarm admin"`)
			apierr.Write(w, r, apierr.New(http.StatusUnauthorized, apierr.CodeUnauthorized, "admin token missing or wrong: send 'Authorization: Bearer <admin token>'"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// decode reads a strict JSON body into v.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if e := decodeBody(w, r, v); e != nil {
		apierr.Write(w, r, e)
		return false
	}
	return true
}

// maxBody bounds an admin request's JSON body.
const maxBody = 64 << 10

// decodeBody reads r's JSON object into v, as the public API reads its
// bodies: an empty body is an empty object (the handler checks what it
// requires), and a refusal names the field and what it must be rather than
// passing on the decoder's words.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) *apierr.Error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if errors.Is(err, io.EOF) {
		return nil // no body: every field keeps its zero value
	}
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var tooBig *http.MaxBytesError
	switch {
	case err == nil:
		if dec.More() {
			return apierr.New(http.StatusBadRequest, apierr.CodeInvalidRequest, "request body has data after the JSON object")
		}
		return nil
	case errors.As(err, &tooBig):
		return apierr.New(http.StatusRequestEntityTooLarge, apierr.CodePayloadTooLarge,
			fmt.Sprintf("request body is over %d bytes", maxBody)).With("maximum", maxBody)
	case errors.As(err, &typ) && typ.Field != "":
		return apierr.Invalid(typ.Field, fmt.Sprintf("field %q must be %s, not %s", typ.Field, jsonKind(typ.Type), typ.Value)).
			With("expected", jsonKind(typ.Type))
	case errors.As(err, &typ):
		return apierr.New(http.StatusBadRequest, apierr.CodeInvalidRequest, "request body must be a JSON object, not "+typ.Value)
	case errors.As(err, &syntax), errors.Is(err, io.ErrUnexpectedEOF):
		return apierr.New(http.StatusBadRequest, apierr.CodeInvalidRequest, "request body is not valid JSON: "+err.Error())
	default: // an unknown field: the decoder's message names it
		return apierr.New(http.StatusBadRequest, apierr.CodeInvalidRequest, "invalid request body: "+strings.TrimPrefix(err.Error(), "json: "))
	}
}

// jsonKind names the JSON type a Go type decodes from.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	default:
		return "an object"
	}
}

// apply proposes cmd and returns its answer, or writes the refusal and
// returns false.
func apply[R any](s *server, w http.ResponseWriter, r *http.Request, cmd fsm.Typed[R]) (R, bool) {
	out, err := propose(s, r, cmd)
	if err != nil {
		s.refuse(w, r, err)
		return out, false
	}
	return out, true
}

// propose proposes cmd within the request's time (at most 10 s).
func propose[R any](s *server, r *http.Request, cmd fsm.Typed[R]) (R, error) {
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	return fsm.Do(ctx, s.cfg.Node, cmd)
}

// checkReason refuses an operator's reason over maxReason bytes, or one
// holding a control character or a bidirectional control (textguard.Line):
// a reason is one line in the node table and the console, and a failed
// video's reason is its customer's error message.
func checkReason(reason string) *apierr.Error {
	if len(reason) > maxReason {
		return apierr.Invalid("reason", fmt.Sprintf("reason is %d bytes; at most %d", len(reason), maxReason)).With("maximum", maxReason)
	}
	if f, ok := textguard.Check(reason, textguard.Line); !ok {
		return apierr.Invalid("reason", f.Message("reason", textguard.Line)).With("position", f.Pos).With("character", f.Code())
	}

	return nil
}

// refuse writes the answer to a command the state refused or could not take.
func (s *server) refuse(w http.ResponseWriter, r *http.Request, err error) {
	e := debitRefusal(err)
	var ceiling *fsm.CreditCeilingError
	var notUnderstood *raftnode.NotUnderstoodError
	switch {
	case e != nil:
	case errors.As(err, &ceiling):
		e = ceilingRefusal(ceiling)
	case errors.As(err, &notUnderstood):
		e = upgradePending(notUnderstood)
	case errors.Is(err, fsm.ErrAccountNotFound):
		e = apierr.New(http.StatusNotFound, apierr.CodeAccountNotFound, "no such account")
	case errors.Is(err, fsm.ErrKeyNotFound):
		e = apierr.NotFound("api key")
	case errors.Is(err, fsm.ErrVideoNotFound):
		e = apierr.NotFound("video")
	case errors.Is(err, scheduler.ErrUnknownNode):
		e = apierr.NotFound("render node")
	case errors.Is(err, fsm.ErrInvalidCommand), errors.Is(err, fsm.ErrInvalidTransition):
		e = apierr.New(http.StatusBadRequest, apierr.CodeInvalidRequest, err.Error())
	case errors.Is(err, raftnode.ErrNotLeader), errors.Is(err, raftnode.ErrTimeout):
		e = apierr.New(http.StatusServiceUnavailable, apierr.CodeInternalError, "the control plane is electing a leader or overloaded; retry")
		e.RetryAfter = 1
	default:
		s.cfg.Logger.Error("admin apply failed", "request_id", apierr.RequestID(r.Context()), "err", err)
		e = apierr.Internal()
	}
	apierr.Write(w, r, e)
}

// upgradePending answers a command some members cannot apply yet: nothing
// was written; it works once they run the newer release.
// The details name each member to upgrade with the highest type it
// understands (absent: it has not reported).
func upgradePending(nu *raftnode.NotUnderstoodError) *apierr.Error {
	type member struct {
		ID          string `json:"id"`
		Understands uint8  `json:"understands,omitempty"`
	}
	members := make([]member, len(nu.Members))
	for i, m := range nu.Members {
		members[i] = member{ID: m.ID, Understands: uint8(m.Level)}
	}
	e := apierr.New(http.StatusServiceUnavailable, apierr.CodeInternalError,
		"the cluster is part-way through an upgrade: "+nu.Error()+"; upgrade them, then retry").
		With("reason", "cluster_upgrade_in_progress").With("command", nu.Type.String()).
		With("command_type", uint8(nu.Type)).With("members", members)
	e.RetryAfter = 30
	return e
}

// aboveCeiling refuses an amount that alone passes the ceiling, before any
// account is looked at.
func aboveCeiling(field, what string, amount int64) *apierr.Error {
	reason := fmt.Sprintf("%s of %d credits is above the ceiling of %d credits an account may hold", what, amount, fsm.MaxCredits)
	return apierr.Invalid(field, reason).With("reason", reason).With("max_credits", fsm.MaxCredits)
}

// ceilingRefusal maps the FSM's refusal of a movement that would raise a balance
// above fsm.MaxCredits: nothing was applied.
func ceilingRefusal(c *fsm.CreditCeilingError) *apierr.Error {
	return apierr.New(http.StatusBadRequest, apierr.CodeInvalidRequest, c.Error()).With("reason", c.Error()).
		With("account_id", c.AccountID).With("amount", c.Amount).With("balance", c.Balance).
		With("held_credits", c.Held).With("balance_after", c.After()).With("max_credits", fsm.MaxCredits)
}

// AccountJSON is an account as the admin API shows it.
type AccountJSON struct {
	ID            string `json:"id"`
	Name          string `json:"name"`
	Plan          string `json:"plan"`
	Premium       bool   `json:"premium"`
	Credits       int64  `json:"credits"`
	FreeVideoUsed bool   `json:"free_video_used"`
	CreatedAt     int64  `json:"created_at"`
}

func accountView(a fsm.Account) AccountJSON {
	return AccountJSON{ID: a.ID, Name: a.Name, Plan: a.Plan, Premium: fsm.Premium(a.Plan), Credits: a.Credits,
		FreeVideoUsed: a.FreeVideoUsed, CreatedAt: time.Unix(0, a.CreatedAt).Unix()}
}

// CreatedAccount answers account creation: the only time the key is shown.
type CreatedAccount struct {
	AccountID string      `json:"account_id"`
	KeyID     string      `json:"key_id"`
	APIKey    string      `json:"api_key"`
	Account   AccountJSON `json:"account"`
}

func badPlan(plan string) *apierr.Error {
	return apierr.Invalid("plan", fmt.Sprintf("plan %q is not valid: use free, pro or max", plan)).With("allowed", []string{fsm.PlanFree, fsm.PlanPro, fsm.PlanMax})
}

// createAccount opens an account with its first API key. With an
// idempotency_key the account is opened once (fsm.CreateAccountOnce), so
// the app may retry a sign-up whose answer it lost: the same key, name,
// plan and credits again, within 24 h, answer that account with
// Idempotent-Replayed: true and a new API key, and the key the earlier
// answer carried is revoked (the state keeps only hashes, so that secret
// cannot be shown again); another request under the key is a 409. Without
// one, every request opens an account (fsm.CreateAccount), as before keys
// existed and while a rolling upgrade is under way.
func (s *server) createAccount(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name           string `json:"name"`
		Plan           string `json:"plan"`
		Credits        int64  `json:"credits"`
		IdempotencyKey string `json:"idempotency_key"`
	}
	if !decode(w, r, &req) {
		return
	}
	if strings.TrimSpace(req.Name) == "" || len(req.Name) > 200 {
		apierr.Write(w, r, apierr.Invalid("name", "name is required, at most 200 characters"))
		return
	}
	if !fsm.ValidPlan(req.Plan) {
		apierr.Write(w, r, badPlan(req.Plan))
		return
	}
	if req.Credits < 0 {
		apierr.Write(w, r, apierr.Invalid("credits", "credits must not be negative"))
		return
	}
	if req.Credits > fsm.MaxCredits {
		apierr.Write(w, r, aboveCeiling("credits", "opening balance", req.Credits))
		return
	}
	if len(req.IdempotencyKey) > fsm.MaxDebitKey {
		apierr.Write(w, r, apierr.Invalid("idempotency_key", fmt.Sprintf("idempotency_key is at most %d characters", fsm.MaxDebitKey)))
		return
	}
	key, hash := ids.NewAPIKey()
	cmd := &fsm.CreateAccount{AccountID: ids.New("acct"), Name: req.Name, Plan: req.Plan, Credits: req.Credits,
		KeyID: ids.New("key"), KeyHash: hash, KeyHint: ids.KeyHint(key), Now: s.cfg.Now().UnixNano()}
	if req.IdempotencyKey == "" {
		if acct, ok := apply(s, w, r, cmd); ok {
			apierr.WriteJSON(w, http.StatusCreated, CreatedAccount{AccountID: cmd.AccountID, KeyID: cmd.KeyID, APIKey: key, Account: accountView(acct)})
		}
		return
	}
	res, ok := apply(s, w, r, &fsm.CreateAccountOnce{CreateAccount: *cmd,
		Key: req.IdempotencyKey, RequestHash: accountRequestHash(req.Name, req.Plan, req.Credits)})
	if !ok {
		return
	}
	if res.Replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	apierr.WriteJSON(w, http.StatusCreated, CreatedAccount{AccountID: res.Account.ID, KeyID: res.KeyID, APIKey: key, Account: accountView(res.Account)})
}

// accountRequestHash stands for an account creation's request, so that a
// retry is told from another request under the same idempotency key. Each
// string goes with its length before it, so that no two requests share an
// encoding (name "ab", plan "c" against name "a", plan "bc").
func accountRequestHash(name, plan string, credits int64) [32]byte {
	b := binary.AppendUvarint(nil, uint64(len(name)))
	b = append(b, name...)
	b = binary.AppendUvarint(b, uint64(len(plan)))
	b = append(b, plan...)
	b = binary.BigEndian.AppendUint64(b, uint64(credits))
	return sha256.Sum256(b)
}

func (s *server) getAccount(w http.ResponseWriter, r *http.Request) {
	a, ok := s.cfg.FSM.Account(chi.URLParam(r, "id"))
	if !ok {
		apierr.Write(w, r, apierr.New(http.StatusNotFound, apierr.CodeAccountNotFound, "no such account"))
		return
	}
	apierr.WriteJSON(w, http.StatusOK, accountView(a))
}

// grantCredits adds credits. With an idempotency_key the grant is made once
// (fsm.GrantCreditsOnce): the same key and amount again, within 24 h,
// answers the account with Idempotent-Replayed: true and adds nothing, so
// the app may retry a grant whose answer it lost; another amount is a 409.
// Without one, every request grants (fsm.GrantCredits), as before keys
// existed and while a rolling upgrade is under way.
func (s *server) grantCredits(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Amount         int64  `json:"amount"`
		IdempotencyKey string `json:"idempotency_key"`
	}
	if !decode(w, r, &req) {
		return
	}
	if req.Amount <= 0 {
		apierr.Write(w, r, apierr.Invalid("amount", "amount must be a positive number of credits"))
		return
	}
	if req.Amount > fsm.MaxCredits {
		apierr.Write(w, r, aboveCeiling("amount", "grant", req.Amount))
		return
	}
	id, now := chi.URLParam(r, "id"), s.cfg.Now().UnixNano()
	if req.IdempotencyKey == "" {
		if acct, ok := apply(s, w, r, &fsm.GrantCredits{AccountID: id, Amount: req.Amount, Now: now}); ok {
			apierr.WriteJSON(w, http.StatusOK, accountView(acct))
		}
		return
	}
	if len(req.IdempotencyKey) > fsm.MaxDebitKey {
		apierr.Write(w, r, apierr.Invalid("idempotency_key", fmt.Sprintf("idempotency_key is at most %d characters", fsm.MaxDebitKey)))
		return
	}
	g, ok := apply(s, w, r, &fsm.GrantCreditsOnce{AccountID: id, Amount: req.Amount, Key: req.IdempotencyKey, Now: now})
	if !ok {
		return
	}
	if g.Replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	apierr.WriteJSON(w, http.StatusOK, accountView(g.Account))
}

func (s *server) setPlan(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Plan string `json:"plan"`
	}
	if !decode(w, r, &req) {
		return
	}
	if !fsm.ValidPlan(req.Plan) {
		apierr.Write(w, r, badPlan(req.Plan))
		return
	}
	acct, ok := apply(s, w, r, &fsm.SetPlan{AccountID: chi.URLParam(r, "id"), Plan: req.Plan, Now: s.cfg.Now().UnixNano()})
	if ok {
		apierr.WriteJSON(w, http.StatusOK, accountView(acct))
	}
}

// CreatedKey answers key creation: the only time the key is shown.
type CreatedKey struct {
	KeyID     string `json:"key_id"`
	APIKey    string `json:"api_key"`
	AccountID string `json:"account_id"`
}

func (s *server) createKey(w http.ResponseWriter, r *http.Request) {
	var req struct {
		AccountID string `json:"account_id"`
	}
	if !decode(w, r, &req) {
		return
	}
	key, hash := ids.NewAPIKey()
	cmd := &fsm.CreateKey{AccountID: req.AccountID, KeyID: ids.New("key"), KeyHash: hash, KeyHint: ids.KeyHint(key), Now: s.cfg.Now().UnixNano()}
	if _, ok := apply(s, w, r, cmd); ok {
		apierr.WriteJSON(w, http.StatusCreated, CreatedKey{KeyID: cmd.KeyID, APIKey: key, AccountID: req.AccountID})
	}
}

// RevokedKey answers key revocation.
type RevokedKey struct {
	KeyID     string `json:"key_id"`
	AccountID string `json:"account_id"`
	Revoked   bool   `json:"revoked"`
	RevokedAt int64  `json:"revoked_at"`
}

func (s *server) revokeKey(w http.ResponseWriter, r *http.Request) {
	k, ok := apply(s, w, r, &fsm.RevokeKey{KeyID: chi.URLParam(r, "id"), Now: s.cfg.Now().UnixNano()})
	if ok {
		apierr.WriteJSON(w, http.StatusOK, RevokedKey{KeyID: k.ID, AccountID: k.AccountID, Revoked: true, RevokedAt: time.Unix(0, k.RevokedAt).Unix()})
	}
}

// FailedVideo answers an operator's fail.
type FailedVideo struct {
	VideoID         string `json:"video_id"`
	Status          string `json:"status"`
	CreditsRefunded bool   `json:"credits_refunded"`
	Refunded        int64  `json:"refunded_credits"`
}

func (s *server) failVideo(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Reason string `json:"reason"`
	}
	if !decode(w, r, &req) {
		return
	}
	if strings.TrimSpace(req.Reason) == "" {
		req.Reason = "cancelled by the operator"
	}
	if e := checkReason(req.Reason); e != nil { // the customer reads it as the video's error message
		apierr.Write(w, r, e)
		return
	}
	id := chi.URLParam(r, "id")
	v, err := propose(s, r, &fsm.FailVideo{VideoID: id, Reason: req.Reason, Now: s.cfg.Now().UnixNano()})
	var tr *fsm.TransitionError
	if errors.As(err, &tr) && tr.From == fsm.StatusFailed {
		// Failed already (a retried command, or the video failed on its
		// own): the outcome the operator asked for, answered as it stands.
		if g, ok := s.cfg.FSM.VideoGraph(id); ok {
			v, err = g.Video, nil
		}
	}
	if err != nil {
		s.refuse(w, r, err)
		return
	}
	apierr.WriteJSON(w, http.StatusOK, FailedVideo{VideoID: v.ID, Status: v.Status, CreditsRefunded: v.CreditsRefunded, Refunded: v.CreditsCharged})
}

// maxReason bounds an operator's reason: for failing a video, which the
// customer reads as its error message, and for cordoning a node.
const maxReason = 500

// benchFill adds completed videos to an account for a benchmark.
func (s *server) benchFill(w http.ResponseWriter, r *http.Request) {
	var req struct {
		AccountID string `json:"account_id"`
		Count     int    `json:"count"`
	}
	if !decode(w, r, &req) {
		return
	}
	if req.Count < 1 || req.Count > fsm.MaxBenchFill {
		apierr.Write(w, r, apierr.Invalid("count", fmt.Sprintf("count must be 1 to %d videos per call", fsm.MaxBenchFill)))
		return
	}
	// A fresh prefix per call: ids never collide, and sort in creation order
	// within it.
	prefix := ids.New("vid") + "_"
	if _, ok := apply(s, w, r, &fsm.BenchFill{AccountID: req.AccountID, IDPrefix: prefix, Count: req.Count, Now: s.cfg.Now().UnixNano()}); ok {
		apierr.WriteJSON(w, http.StatusOK, map[string]any{"account_id": req.AccountID, "added": req.Count, "id_prefix": prefix})
	}
}

func (s *server) snapshot(w http.ResponseWriter, r *http.Request) {
	if err := s.cfg.Node.Snapshot(); err != nil {
		s.cfg.Logger.Error("snapshot failed", "err", err)
		apierr.Write(w, r, apierr.New(http.StatusInternalServerError, apierr.CodeInternalError, "snapshot failed: "+err.Error()))
		return
	}
	apierr.WriteJSON(w, http.StatusOK, map[string]any{"snapshot": "taken", "applied_index": s.cfg.FSM.AppliedIndex()})
}

func (s *server) status(w http.ResponseWriter, r *http.Request) {
	st := s.cfg.FSM.Stats()
	apierr.WriteJSON(w, http.StatusOK, map[string]any{
		"raft": s.cfg.Node.Stats(),
		"state": map[string]any{
			"accounts": st.Accounts, "keys": st.Keys, "videos": st.Videos, "queued": st.Queued,
			"idempotency_records": st.Idempotency, "videos_by_status": st.ByStatus, "applied_index": s.cfg.FSM.AppliedIndex(),
		},
	})
}
