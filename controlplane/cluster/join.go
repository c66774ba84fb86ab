package cluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// JoinRequest is what a new node tells the cluster about itself; a member
// reports the same to MemberPath when its record is out of date.
type JoinRequest struct {
	ID        string `json:"id"`
	RaftAddr  string `json:"raft_addr"`
	PublicURL string `json:"public_url"`
	AdminURL  string `json:"admin_url"`
	AgentURL  string `json:"agent_url"`
	// Understands is the highest command type the node's binary applies
	// (fsm.Understood); absent, the cluster takes it for a binary of the
	// release before levels were recorded (fsm.Baseline).
	Understands uint8 `json:"understands,omitempty"`
	// Stage is StageNonvoter for the first step of a join (the node receives
	// the log without counting for a majority) or StageVoter for the second,
	// once it has caught up; empty adds a voter at once (nodes from before
	// staged joins).
	Stage string `json:"stage,omitempty"`
}

// Join stages.
const (
	StageNonvoter = "nonvoter"
	StageVoter    = "voter"
)

// JoinPath is the admin endpoint a joining node calls on any member.
const JoinPath = "/admin/v1/cluster/join"

// MemberPath is the admin endpoint (PUT, followed by the member's id) where a
// member reports its addresses and level when the state holds other ones.
const MemberPath = "/admin/v1/cluster/members/"

// Join asks the cluster behind adminURL (any member: followers forward to the
// leader) to add this node at req.Stage, retrying with backoff while the cluster
// is unreachable or electing, until ctx ends. A refusal (4xx) is final.
// tlsCfg checks the member's certificate when adminURL is https (nil: the
// system's CAs).
func Join(ctx context.Context, adminURL, token string, req JoinRequest, tlsCfg *tls.Config, log *slog.Logger) error {
	body, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("join: %w", err)
	}
	endpoint := strings.TrimRight(adminURL, "/") + JoinPath
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tlsCfg
	hc := &http.Client{Transport: tr}
	defer tr.CloseIdleConnections()
	wait := 200 * time.Millisecond
	for attempt := 1; ; attempt++ {
		status, msg, err := postJoin(ctx, hc, endpoint, token, body)
		switch {
		case err == nil && status == http.StatusOK:
			log.Info("joined the cluster", "via", adminURL, "node_id", req.ID, "attempts", attempt)
			return nil
		case err == nil && status >= 400 && status < 500:
			return fmt.Errorf("join via %s refused (%d): %s", adminURL, status, msg)
		}
		log.Warn("join attempt failed; retrying", "via", adminURL, "attempt", attempt, "status", status, "err", err, "body", msg)
		select {
		case <-ctx.Done():
			return fmt.Errorf("join via %s: %w", adminURL, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// Report sends this member's record to MemberPath on the admin listener at
// adminURL (the leader's; a follower would forward it), once: the caller
// decides when to try again. tlsCfg is as for Join.
func Report(ctx context.Context, adminURL, token string, req JoinRequest, tlsCfg *tls.Config) error {
	body, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	endpoint := strings.TrimRight(adminURL, "/") + MemberPath + url.PathEscape(req.ID)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tlsCfg
	defer tr.CloseIdleConnections()
	status, msg, err := send(ctx, &http.Client{Transport: tr}, http.MethodPut, endpoint, token, body)
	switch {
	case err != nil:
		return fmt.Errorf("report to %s: %w", adminURL, err)
	case status != http.StatusOK:
		return fmt.Errorf("report to %s refused (%d): %s", adminURL, status, msg)
	}
	return nil
}

func postJoin(ctx context.Context, hc *http.Client, endpoint, token string, body []byte) (int, string, error) {
	return send(ctx, hc, http.MethodPost, endpoint, token, body)
}

func send(ctx context.Context, hc *http.Client, method, endpoint, token string, body []byte) (int, string, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	r, err := http.NewRequestWithContext(ctx, method, endpoint, bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	r.Header.Set("Authorization", "Bearer "+token)
	r.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(r)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, strings.TrimSpace(string(b)), nil
}
