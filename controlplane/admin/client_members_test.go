package admin

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/vidfarm/vidfarm/internal/members"
)

// member is one fake control-plane member's admin listener: it counts the
// requests it got and answers them with how, or hangs up on them without an
// answer when how is nil.
type member struct {
	*httptest.Server
	got  atomic.Int32
	body atomic.Value // the last request's body
}

func newMember(t *testing.T, how http.HandlerFunc) *member {
	t.Helper()
	m := &member{}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.got.Add(1)
		b, _ := io.ReadAll(r.Body)
		m.body.Store(string(b))
		if how == nil {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		how(w, r)
	}))
	t.Cleanup(m.Close)
	return m
}

// deadURL is a member's URL that refuses connections: nothing listens there.
func deadURL(t *testing.T) string {
	t.Helper()
	s := httptest.NewServer(http.NotFoundHandler())
	u := s.URL
	s.Close()
	return u
}

func answer(body string, header ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		_, _ = io.WriteString(w, body)
	}
}

func TestClientAcrossMembers(t *testing.T) {
	ctx := context.Background()
	t.Run("a member that refuses is passed over, a write too", func(t *testing.T) {
		live := newMember(t, answer(`{"id":"acct_1"}`))
		c := &Client{Server: deadURL(t), Members: []string{live.URL}, Token: "tok"}
		for _, do := range []func() error{
			func() error { _, err := c.Account(ctx, "acct_1"); return err },
			func() error { _, err := c.GrantCredits(ctx, "acct_1", 5); return err },
		} {
			if err := do(); err != nil {
				t.Fatal(err)
			}
		}
		if n := live.got.Load(); n != 2 {
			t.Fatalf("the live member got %d requests, want 2", n)
		}
		if b, _ := live.body.Load().(string); !strings.Contains(b, `"amount":5`) {
			t.Fatalf("the grant arrived as %q", b)
		}
	})
	t.Run("a write that may have arrived is not sent again", func(t *testing.T) {
		hangs, next := newMember(t, nil), newMember(t, answer(`{}`))
		c := &Client{Server: hangs.URL, Members: []string{next.URL}}
		if _, err := c.GrantCredits(ctx, "acct_1", 5); err == nil {
			t.Fatal("a grant whose member hung up succeeded")
		}
		if hangs.got.Load() != 1 || next.got.Load() != 0 {
			t.Fatalf("requests: %d to the member that hung up, %d to the next; want 1 and 0", hangs.got.Load(), next.got.Load())
		}
		// The failure moved the client on: its next request goes to the
		// member after the one that hung up.
		if _, err := c.Account(ctx, "acct_1"); err != nil || next.got.Load() != 1 {
			t.Fatalf("the next read: %v, %d requests at the next member", err, next.got.Load())
		}
	})
	t.Run("a read that got no answer is sent to the next member", func(t *testing.T) {
		hangs, next := newMember(t, nil), newMember(t, answer(`{"id":"acct_1"}`))
		c := &Client{Server: hangs.URL, Members: []string{next.URL}}
		a, err := c.Account(ctx, "acct_1")
		if err != nil || a.ID != "acct_1" || hangs.got.Load() != 1 || next.got.Load() != 1 {
			t.Fatalf("%+v, %v; requests %d and %d, want 1 and 1", a, err, hangs.got.Load(), next.got.Load())
		}
	})
	t.Run("each member is tried once", func(t *testing.T) {
		a, b := newMember(t, nil), newMember(t, nil)
		c := &Client{Server: a.URL, Members: []string{b.URL}}
		if _, err := c.Account(ctx, "acct_1"); err == nil {
			t.Fatal("a read no member answered succeeded")
		}
		if a.got.Load() != 1 || b.got.Load() != 1 {
			t.Fatalf("requests %d and %d, want 1 and 1", a.got.Load(), b.got.Load())
		}
	})
	t.Run("without members a refused request fails", func(t *testing.T) {
		c := &Client{Server: deadURL(t)}
		if _, err := c.Account(ctx, "acct_1"); err == nil || !strings.Contains(err.Error(), "/admin/v1/accounts/acct_1") {
			t.Fatalf("err = %v, want the refused request named", err)
		}
	})
	t.Run("follows the leader a follower names, only to a member it knows", func(t *testing.T) {
		leader := newMember(t, answer(`{"id":"acct_1"}`))
		stranger := newMember(t, answer(`{"id":"acct_1"}`))
		follower := newMember(t, func(w http.ResponseWriter, r *http.Request) {
			to := leader.URL
			if r.URL.Query().Get("stranger") != "" {
				to = stranger.URL
			}
			answer(`{"id":"acct_1"}`, members.HeaderLeader, to+"/")(w, r)
		})
		c := &Client{Server: follower.URL, Members: []string{leader.URL}}
		if _, err := c.Do(ctx, http.MethodGet, "/admin/v1/accounts/acct_1?stranger=1", nil); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Account(ctx, "acct_1"); err != nil { // still at the follower, which names the leader
			t.Fatal(err)
		}
		if _, err := c.Account(ctx, "acct_1"); err != nil {
			t.Fatal(err)
		}
		if follower.got.Load() != 2 || leader.got.Load() != 1 || stranger.got.Load() != 0 {
			t.Fatalf("requests: follower %d, leader %d, stranger %d; want 2, 1, 0", follower.got.Load(), leader.got.Load(), stranger.got.Load())
		}
	})
	t.Run("a restore's body reaches the next member whole", func(t *testing.T) {
		live := newMember(t, answer(`{"restored":true}`))
		c := &Client{Server: deadURL(t), Members: []string{live.URL}}
		if _, err := c.Restore(ctx, strings.NewReader("the whole state"), false); err != nil {
			t.Fatal(err)
		}
		if b, _ := live.body.Load().(string); b != "the whole state" {
			t.Fatalf("the restore arrived as %q", b)
		}
	})
	t.Run("a member that is no URL", func(t *testing.T) {
		for _, bad := range []string{"127.0.0.1:8081", "ftp://h:1", "http://"} {
			c := &Client{Server: "http://127.0.0.1:1", Members: []string{bad}}
			if _, err := c.Account(ctx, "acct_1"); err == nil || !strings.Contains(err.Error(), bad) {
				t.Fatalf("member %q: err = %v, want it named", bad, err)
			}
		}
	})
}
