package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/controlplane/cluster"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/internal/members"
)

// Client calls the admin API.
type Client struct {
	Server string // e.g. http://127.0.0.1:8081
	// Members are the other control-plane members' admin URLs, for a
	// client of a cluster: a request that cannot reach the member it is
	// sent to goes to the next (see send), and one a follower forwarded
	// moves the client to the leader it names (internal/members).
	Members []string
	Token   string
	HTTP    *http.Client

	once    sync.Once
	cursor  *members.Cursor
	urlsErr error
}

// Do sends one request and returns the raw JSON answer; an error answer comes back
// as *apierr.Error.
func (c *Client) Do(ctx context.Context, method, path string, body any) (json.RawMessage, error) {
	var b []byte
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			return nil, fmt.Errorf("encode request: %w", err)
		}
	}
	resp, err := c.send(ctx, method, path, func() io.Reader {
		if b == nil {
			return nil
		}
		return bytes.NewReader(b)
	}, body != nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("read answer of %s %s: %w", method, path, err)
	}
	return raw, nil
}

// send sends one request, made anew for each try by body (nil: none), and
// returns a 2xx response for the caller to read; an error answer comes
// back as *apierr.Error. With Members, a member that cannot be reached is
// passed over for the next, each member tried once: any request whose
// connection could not be opened (it never left, so nothing can act
// twice), and a read (GET) that got no answer. A write that may have
// arrived is not sent again: an account or a grant would be made twice.
func (c *Client) send(ctx context.Context, method, path string, body func() io.Reader, isJSON bool) (*http.Response, error) {
	cur, err := c.members()
	if err != nil {
		return nil, err
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	for tries := 1; ; tries++ {
		at := cur.At()
		req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(at.String(), "/")+path, body())
		if err != nil {
			return nil, fmt.Errorf("build request: %w", err)
		}
		req.Header.Set("Authorization", "Bearer "+c.Token)
		if isJSON {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := hc.Do(req)
		if err != nil {
			cur.Failover(ctx, at)
			var op *net.OpError
			unsent := errors.As(err, &op) && op.Op == "dial"
			if (unsent || method == http.MethodGet) && tries < len(c.Members)+1 && ctx.Err() == nil {
				continue
			}
			return nil, fmt.Errorf("%s %s: %w", method, req.URL, err)
		}
		cur.Answered(ctx, at, resp.Header)
		if resp.StatusCode >= 300 {
			defer resp.Body.Close()
			raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			return nil, answerError(method, path, resp.StatusCode, raw)
		}
		return resp, nil
	}
}

// members is where requests go, made on first use from Server and Members.
func (c *Client) members() (*members.Cursor, error) {
	c.once.Do(func() {
		var urls []*url.URL
		for _, s := range append([]string{c.Server}, c.Members...) {
			u, err := url.Parse(strings.TrimRight(s, "/"))
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				c.urlsErr = fmt.Errorf("admin API address %q: want http(s)://host:port", s)
				return
			}
			urls = append(urls, u)
		}
		c.cursor = members.NewSet(urls[0], urls[1:]...).Cursor()
	})
	return c.cursor, c.urlsErr
}

// answerError turns an error answer into *apierr.Error, or a plain error when
// it is not the envelope.
func answerError(method, path string, status int, raw []byte) error {
	var env struct {
		Error *apierr.Error `json:"error"`
	}
	if json.Unmarshal(raw, &env) == nil && env.Error != nil {
		env.Error.Status = status
		return env.Error
	}
	return fmt.Errorf("%s %s: HTTP %d: %s", method, path, status, strings.TrimSpace(string(raw)))
}

func (c *Client) into(ctx context.Context, method, path string, body, out any) error {
	raw, err := c.Do(ctx, method, path, body)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s %s: the answer is not the admin API's JSON (is --server an admin listener?): %w", method, path, err)
	}
	return nil
}

// CreateAccount opens an account and returns it with its first key.
func (c *Client) CreateAccount(ctx context.Context, name, plan string, credits int64) (CreatedAccount, error) {
	return c.CreateAccountOnce(ctx, name, plan, credits, "")
}

// CreateAccountOnce opens an account once per idempotency key ("": every
// call opens one): a retry with the same key and request answers the same
// account with a new key, and the key of the earlier answer no longer
// works.
func (c *Client) CreateAccountOnce(ctx context.Context, name, plan string, credits int64, key string) (CreatedAccount, error) {
	var out CreatedAccount
	body := map[string]any{"name": name, "plan": plan, "credits": credits}
	if key != "" {
		body["idempotency_key"] = key
	}
	err := c.into(ctx, http.MethodPost, "/admin/v1/accounts", body, &out)
	return out, err
}

// Account reads an account.
func (c *Client) Account(ctx context.Context, id string) (AccountJSON, error) {
	var out AccountJSON
	err := c.into(ctx, http.MethodGet, "/admin/v1/accounts/"+url.PathEscape(id), nil, &out)
	return out, err
}

// CreateKey adds an API key to an account.
func (c *Client) CreateKey(ctx context.Context, accountID string) (CreatedKey, error) {
	var out CreatedKey
	err := c.into(ctx, http.MethodPost, "/admin/v1/keys", map[string]any{"account_id": accountID}, &out)
	return out, err
}

// RevokeKey revokes an API key.
func (c *Client) RevokeKey(ctx context.Context, keyID string) (RevokedKey, error) {
	var out RevokedKey
	err := c.into(ctx, http.MethodPost, "/admin/v1/keys/"+url.PathEscape(keyID)+"/revoke", nil, &out)
	return out, err
}

// GrantCredits adds credits to an account.
func (c *Client) GrantCredits(ctx context.Context, accountID string, amount int64) (AccountJSON, error) {
	return c.GrantCreditsOnce(ctx, accountID, amount, "")
}

// GrantCreditsOnce adds credits once per idempotency key ("": every call
// grants): a retry with the same key and amount adds nothing.
func (c *Client) GrantCreditsOnce(ctx context.Context, accountID string, amount int64, key string) (AccountJSON, error) {
	var out AccountJSON
	body := map[string]any{"amount": amount}
	if key != "" {
		body["idempotency_key"] = key
	}
	err := c.into(ctx, http.MethodPost, "/admin/v1/accounts/"+url.PathEscape(accountID)+"/credits", body, &out)
	return out, err
}

// SetPlan changes an account's plan.
func (c *Client) SetPlan(ctx context.Context, accountID, plan string) (AccountJSON, error) {
	var out AccountJSON
	err := c.into(ctx, http.MethodPut, "/admin/v1/accounts/"+url.PathEscape(accountID)+"/plan", map[string]any{"plan": plan}, &out)
	return out, err
}

// FailVideo fails a queued or processing video and refunds it.
func (c *Client) FailVideo(ctx context.Context, videoID, reason string) (FailedVideo, error) {
	var out FailedVideo
	err := c.into(ctx, http.MethodPost, "/admin/v1/videos/"+url.PathEscape(videoID)+"/fail", map[string]any{"reason": reason}, &out)
	return out, err
}

// Snapshot asks the node for a snapshot now.
func (c *Client) Snapshot(ctx context.Context) (json.RawMessage, error) {
	return c.Do(ctx, http.MethodPost, "/admin/v1/snapshot", nil)
}

// Debit takes credits for a render the app does itself; reuse key when retrying.
func (c *Client) Debit(ctx context.Context, accountID string, amount int64, key string) (Debit, error) {
	var out Debit
	err := c.into(ctx, http.MethodPost, "/admin/v1/accounts/"+url.PathEscape(accountID)+"/debits",
		map[string]any{"amount": amount, "idempotency_key": key}, &out)
	return out, err
}

// ClusterStatus reads the node's Raft state and the app-database bridge's.
func (c *Client) ClusterStatus(ctx context.Context) (json.RawMessage, error) {
	return c.Do(ctx, http.MethodGet, "/admin/v1/cluster/status", nil)
}

// ClusterMembers lists the voters, the leader and their published addresses.
func (c *Client) ClusterMembers(ctx context.Context) (ClusterMembers, error) {
	var out ClusterMembers
	err := c.into(ctx, http.MethodGet, "/admin/v1/cluster/members", nil, &out)
	return out, err
}

// RemoveNode takes a node out of the cluster.
func (c *Client) RemoveNode(ctx context.Context, id string) (json.RawMessage, error) {
	return c.Do(ctx, http.MethodPost, "/admin/v1/cluster/remove", map[string]string{"id": id})
}

// Backup streams the cluster's state into w.
func (c *Client) Backup(ctx context.Context, w io.Writer) (int64, error) {
	resp, err := c.raw(ctx, http.MethodGet, "/admin/v1/backup", nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		return n, fmt.Errorf("read backup: %w", err)
	}
	return n, nil
}

// Restore replaces the cluster's state with the backup read from r; force is
// needed when the cluster already holds accounts.
func (c *Client) Restore(ctx context.Context, r io.Reader, force bool) (json.RawMessage, error) {
	path := "/admin/v1/restore"
	if force {
		path += "?force=true"
	}
	resp, err := c.raw(ctx, http.MethodPost, path, r)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(io.LimitReader(resp.Body, 1<<20))
}

// raw sends body as is and returns a 2xx response for the caller to read; an
// error answer comes back as *apierr.Error. A body goes out once: it is
// sent again (to the next member) only when its connection could not be
// opened, before any of it was read.
func (c *Client) raw(ctx context.Context, method, path string, body io.Reader) (*http.Response, error) {
	return c.send(ctx, method, path, func() io.Reader {
		if body == nil {
			return nil
		}
		return io.NopCloser(body) // the caller's to close, and to reuse after a failed dial
	}, false)
}

// AddNode adds a node with the addresses it will be reached at, at
// req.Stage, as `vidfarm server --join` does for itself; for operators who
// add a node by hand. The voter stage is refused (409, details.reason)
// unless the node is already a nonvoter there and has caught up. A request that states no level is sent with this binary's
// (fsm.Understood): the node is taken to run the release of the tool that
// adds it. It corrects its record itself once it runs (it reports a level
// that differs), but a node older than every member must not be added.
func (c *Client) AddNode(ctx context.Context, req cluster.JoinRequest) (json.RawMessage, error) {
	if req.Understands == 0 {
		req.Understands = uint8(fsm.Understood())
	}
	return c.Do(ctx, http.MethodPost, cluster.JoinPath, req)
}
