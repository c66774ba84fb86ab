package console

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
)

// CookieName is the session cookie; CSRFHeader the header that carries a
// session's CSRF token on state-changing requests.
const (
	CookieName = "vidfarm_console"
	CSRFHeader = "X-CSRF-Token"
)

// codeForbidden answers a request with a session that the console refuses
// to act on (no CSRF token, another site's request).
const codeForbidden = "forbidden"

// session is one logged-in browser.
type session struct {
	csrf          string
	created, seen time.Time
}

// sessions are this node's live sessions, by the SHA-256 of their cookie
// value (the map never holds a usable cookie).
type sessions struct {
	mu        sync.Mutex
	m         map[[32]byte]*session
	ttl, idle time.Duration
	now       func() time.Time
}

func newSessions(ttl, idle time.Duration, now func() time.Time) *sessions {
	return &sessions{m: map[[32]byte]*session{}, ttl: ttl, idle: idle, now: now}
}

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand never fails on supported systems
	return base64.RawURLEncoding.EncodeToString(b)
}

func (s *sessions) expired(x *session, now time.Time) bool {
	return now.Sub(x.created) >= s.ttl || now.Sub(x.seen) >= s.idle
}

// create starts a session and returns its cookie value. Expired sessions go
// first; past MaxSessions, the least recently seen.
func (s *sessions) create() (string, *session) {
	id, now := randomToken(), s.now()
	x := &session{csrf: randomToken(), created: now, seen: now}
	s.mu.Lock()
	defer s.mu.Unlock()
	var oldest [32]byte
	var oldestSeen time.Time
	for k, v := range s.m {
		if s.expired(v, now) {
			delete(s.m, k)
		} else if oldestSeen.IsZero() || v.seen.Before(oldestSeen) {
			oldest, oldestSeen = k, v.seen
		}
	}
	if len(s.m) >= MaxSessions {
		delete(s.m, oldest)
	}
	s.m[sha256.Sum256([]byte(id))] = x
	return id, x
}

// get returns the live session of a cookie value and marks it seen.
func (s *sessions) get(id string) (session, bool) {
	k, now := sha256.Sum256([]byte(id)), s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	x, ok := s.m[k]
	if !ok {
		return session{}, false
	}
	if s.expired(x, now) {
		delete(s.m, k)
		return session{}, false
	}
	x.seen = now
	return *x, true
}

func (s *sessions) count() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return float64(len(s.m))
}

func (s *sessions) end(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, sha256.Sum256([]byte(id)))
}

type sessionKey struct{}

// SessionJSON answers the login and GET /console/api/session: the token the
// page sends back on state-changing requests, and when the session ends at
// the latest.
type SessionJSON struct {
	CSRFToken string    `json:"csrf_token"`
	ExpiresAt time.Time `json:"expires_at"`
}

func (c *Console) sessionView(x session) SessionJSON {
	return SessionJSON{CSRFToken: x.csrf, ExpiresAt: x.created.Add(c.cfg.SessionTTL).UTC()}
}

func (c *Console) cookie(value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: CookieName, Value: value, Path: "/console", MaxAge: maxAge,
		HttpOnly: true, Secure: c.cfg.Secure, SameSite: http.SameSiteStrictMode}
}

func unauthorized(w http.ResponseWriter, r *http.Request, msg string) {
	apierr.Write(w, r, apierr.New(http.StatusUnauthorized, apierr.CodeUnauthorized, msg))
}

func forbidden(w http.ResponseWriter, r *http.Request, msg string) {
	apierr.Write(w, r, apierr.New(http.StatusForbidden, codeForbidden, msg))
}

// login takes {"token": admin token} and starts a session.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Token string `json:"token"`
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		apierr.Write(w, r, apierr.New(http.StatusBadRequest, apierr.CodeInvalidRequest, `the login body must be {"token": "<admin token>"}: `+err.Error()))
		return
	}
	client := clientOf(r.RemoteAddr)
	if left := c.throttle.blocked(client); left > 0 {
		c.metrics.logins.WithLabelValues("throttled").Inc()
		e := apierr.New(http.StatusTooManyRequests, apierr.CodeRateLimited,
			fmt.Sprintf("%d wrong logins from %s within %s: wait before trying again", MaxLoginFailures, client, LoginWindow))
		e.RetryAfter = int(left.Seconds()) + 1
		apierr.Write(w, r, e)
		return
	}
	if c.cfg.Token == "" || subtle.ConstantTimeCompare([]byte(req.Token), []byte(c.cfg.Token)) != 1 {
		c.throttle.fail(client)
		c.cfg.Logger.Warn("console login refused", "remote", r.RemoteAddr, "request_id", apierr.RequestID(r.Context()))
		c.metrics.logins.WithLabelValues("refused").Inc()
		unauthorized(w, r, "wrong admin token: give the --admin-token (VIDFARM_ADMIN_TOKEN) the control plane runs with")
		return
	}
	if old, err := r.Cookie(CookieName); err == nil {
		c.sessions.end(old.Value) // a new login replaces the browser's session
	}
	id, x := c.sessions.create()
	http.SetCookie(w, c.cookie(id, int(c.cfg.SessionTTL/time.Second)))
	c.metrics.logins.WithLabelValues("ok").Inc()
	c.cfg.Logger.Info("console login", "remote", r.RemoteAddr)
	apierr.WriteJSON(w, http.StatusOK, c.sessionView(*x))
}

// logout ends the session and clears the cookie.
func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	if ck, err := r.Cookie(CookieName); err == nil {
		c.sessions.end(ck.Value)
	}
	http.SetCookie(w, c.cookie("", -1))
	w.WriteHeader(http.StatusNoContent)
}

func (c *Console) session(w http.ResponseWriter, r *http.Request) {
	apierr.WriteJSON(w, http.StatusOK, c.sessionView(r.Context().Value(sessionKey{}).(session)))
}

// requireSession admits a request with a live session cookie.
func (c *Console) requireSession(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ck, err := r.Cookie(CookieName)
		if err != nil {
			unauthorized(w, r, "not logged in to the console: log in with the admin token")
			return
		}
		x, ok := c.sessions.get(ck.Value)
		if !ok {
			unauthorized(w, r, "the console session ended (expired, logged out, or made by another control-plane node): log in again")
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), sessionKey{}, x)))
	})
}

// requireCSRF admits a request that carries its session's CSRF token.
func (c *Console) requireCSRF(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		x := r.Context().Value(sessionKey{}).(session)
		if subtle.ConstantTimeCompare([]byte(r.Header.Get(CSRFHeader)), []byte(x.csrf)) != 1 {
			forbidden(w, r, "missing or wrong "+CSRFHeader+" header: send the csrf_token of GET /console/api/session")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// sameSite refuses what a browser says comes from another site: a
// Sec-Fetch-Site other than same-origin or none, or an Origin whose host is
// not the one addressed. SameSite=Strict already keeps the cookie off such
// requests; this also covers the login, which has no cookie yet.
func sameSite(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s := r.Header.Get("Sec-Fetch-Site"); s != "" && s != "same-origin" && s != "none" {
			forbidden(w, r, "a request from another site ("+s+") is refused: use the console's own pages")
			return
		}
		if o := r.Header.Get("Origin"); o != "" {
			u, err := url.Parse(o)
			if err != nil || u.Host != r.Host {
				forbidden(w, r, "a request from origin "+o+" is refused: use the console's own pages")
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}
