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
	"strings"
	"time"
)

// JoinRequest is what a new node tells the cluster about itself.
type JoinRequest struct {
	ID        string `json:"id"`
	RaftAddr  string `json:"raft_addr"`
	PublicURL string `json:"public_url"`
	AdminURL  string `json:"admin_url"`
	AgentURL  string `json:"agent_url"`
}

// JoinPath is the admin endpoint a joining node calls on any member.
const JoinPath = "/admin/v1/cluster/join"

// Join asks the cluster behind adminURL (any member: followers forward to the
// leader) to add this node as a voter, retrying with backoff while the cluster
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

func postJoin(ctx context.Context, hc *http.Client, endpoint, token string, body []byte) (int, string, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
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
