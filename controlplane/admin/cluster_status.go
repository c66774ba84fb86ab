package admin

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// ClusterStatus answers GET /admin/v1/cluster/status: this node's own view (a
// follower answers it too); `cluster members` lists the voters.
type ClusterStatus struct {
	NodeID        string `json:"node_id"`
	State         string `json:"state"`
	LeaderID      string `json:"leader_id"`
	LeaderAddress string `json:"leader_address"`
	Term          uint64 `json:"term"`
	LastLogIndex  uint64 `json:"last_log_index"`
	CommitIndex   uint64 `json:"commit_index"`
	AppliedIndex  uint64 `json:"applied_index"`
	// Understands is the highest command type this node's binary applies
	// (fsm.Understood): during a rolling upgrade, the nodes still below the
	// others' figure are the ones left to upgrade.
	Understands uint8 `json:"understands"`
	// LastContactMS is how long ago a follower last heard from its leader
	// (absent on the leader and before the first contact): a follower whose
	// figure nears the Raft heartbeat timeout is about to call an election.
	LastContactMS *float64 `json:"last_contact_ms,omitempty"`
	// AppDB is the app-database bridge's status, {"enabled": false} without --app-db.
	AppDB any `json:"app_db"`
	// Removed says this node was removed from the cluster (its latest Raft
	// configuration lists others, not it): it will never have a leader
	// again; stop it, or empty its data directory and --join it anew.
	// Absent otherwise.
	Removed bool `json:"removed,omitempty"`
}

func (s *server) clusterStatus(w http.ResponseWriter, r *http.Request) {
	st := s.cfg.Node.Stats()
	num := func(k string) uint64 {
		n, _ := strconv.ParseUint(st[k], 10, 64)
		return n
	}
	out := ClusterStatus{State: strings.ToLower(st["state"]),
		Term: num("term"), LastLogIndex: num("last_log_index"), CommitIndex: num("commit_index"),
		AppliedIndex: s.cfg.FSM.AppliedIndex(), Understands: uint8(fsm.Understood()), AppDB: map[string]bool{"enabled": false}}
	if d, err := time.ParseDuration(st["last_contact"]); err == nil && out.State == "follower" {
		ms := float64(d) / float64(time.Millisecond)
		out.LastContactMS = &ms
	}
	if s.cfg.Cluster != nil {
		out.NodeID = s.cfg.Cluster.ID()
		out.LeaderID, out.LeaderAddress = s.cfg.Cluster.Leader()
		if out.LeaderID == "" {
			_, out.Removed = s.cfg.Cluster.Removed()
		}
	}
	if s.cfg.AppDB != nil {
		out.AppDB = s.cfg.AppDB()
	}
	apierr.WriteJSON(w, http.StatusOK, out)
}

// Debit answers a debit: the account's balance right after it, and whether the
// key had been used before (then nothing was taken again).
type Debit struct {
	AccountID      string `json:"account_id"`
	Amount         int64  `json:"amount"`
	IdempotencyKey string `json:"idempotency_key"`
	Balance        int64  `json:"balance"`
	Replayed       bool   `json:"replayed"`
	CreatedAt      int64  `json:"created_at"`
}

// debit takes credits for a render the app does itself. The idempotency key makes
// a retry safe: the same key and amount answers the first debit again (200 with
// Idempotent-Replayed: true) and takes nothing; another amount is a 409.
func (s *server) debit(w http.ResponseWriter, r *http.Request) {
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
	if k := req.IdempotencyKey; k == "" || len(k) > fsm.MaxDebitKey {
		apierr.Write(w, r, apierr.Invalid("idempotency_key", "idempotency_key is required, 1-255 characters: reuse it when retrying the same debit"))
		return
	}
	cmd := &fsm.DebitCredits{AccountID: chi.URLParam(r, "id"), Amount: req.Amount, Key: req.IdempotencyKey, Now: s.cfg.Now().UnixNano()}
	d, ok := apply(s, w, r, cmd)
	if !ok {
		return
	}
	status := http.StatusCreated
	if d.Replayed {
		status = http.StatusOK
		w.Header().Set("Idempotent-Replayed", "true")
	}
	apierr.WriteJSON(w, status, Debit{AccountID: d.AccountID, Amount: d.Amount, IdempotencyKey: d.Key, Balance: d.Balance,
		Replayed: d.Replayed, CreatedAt: d.CreatedAt / 1e9})
}

// debitRefusal maps the refusals of a debit (a balance that does not cover
// it) and of an idempotency key reused for another request (a debit, a
// keyed grant or a keyed account creation).
func debitRefusal(err error) *apierr.Error {
	var ins *fsm.InsufficientCreditsError
	switch {
	case errors.As(err, &ins):
		return apierr.New(http.StatusPaymentRequired, apierr.CodeInsufficientCredits, "the account's balance does not cover the debit").
			With("required_credits", ins.Required).With("remaining_credits", ins.Remaining)
	case errors.Is(err, fsm.ErrDuplicateRequest):
		return apierr.New(http.StatusConflict, apierr.CodeDuplicateRequest, err.Error()+": a new account, grant or debit needs a new idempotency key")
	}
	return nil
}
