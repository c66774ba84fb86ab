package api

import (
	"context"
	"crypto/subtle"
	"net/http"
	"strings"
	"unicode"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/controlplane/ids"
)

type principal struct {
	AccountID string
	KeyID     string
}

// principalOf is the request's principal; zero before authenticate.
func principalOf(r *http.Request) principal {
	if hold, ok := r.Context().Value(holderKey{}).(*principalHolder); ok {
		return hold.p
	}
	return principal{}
}

// principalHolder is where authenticate puts the principal and the
// handlers find it. observe, which runs outside authenticate, makes it, so
// that its request log line can name the account too; authenticate fills
// it in place rather than copying the request for a context value.
type principalHolder struct{ p principal }

type holderKey struct{}

// withHolder returns r carrying a holder, and the holder: r's own if it
// has one.
func withHolder(r *http.Request) (*http.Request, *principalHolder) {
	if hold, ok := r.Context().Value(holderKey{}).(*principalHolder); ok {
		return r, hold
	}
	hold := &principalHolder{}
	return r.WithContext(context.WithValue(r.Context(), holderKey{}, hold)), hold
}

// apiKey takes the key from "Authorization: Bearer" or "X-API-Key".
func apiKey(r *http.Request) string {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, token, ok := strings.Cut(h, " ")
		if ok && strings.EqualFold(scheme, "Bearer") {
			return strings.TrimSpace(token)
		}
	}
	return strings.TrimSpace(r.Header.Get("X-API-Key"))
}

// missingKeyMessage says why no key was read: none sent, or an
// Authorization header in another form than Bearer (a key sent as Basic,
// or bare), which a client debugging its 401 would otherwise take for a
// wrong key.
func missingKeyMessage(r *http.Request) string {
	const how = "send it as 'Authorization: Bearer <API_KEY>' or 'X-API-Key: <API_KEY>'"
	h := strings.TrimSpace(r.Header.Get("Authorization"))
	if h == "" {
		return "no API key: " + how
	}
	scheme, _, found := strings.Cut(h, " ")
	if strings.EqualFold(scheme, "Bearer") {
		return "no API key: the Authorization header says Bearer but carries no key; " + how
	}
	if !found {
		return "no API key: the Authorization header has no scheme (the key alone?); " + how
	}
	// The scheme is the client's text: named only when it looks like one.
	named := "the " + scheme + " scheme"
	if len(scheme) > 20 || strings.IndexFunc(scheme, func(c rune) bool { return !unicode.IsLetter(c) && c != '-' }) >= 0 {
		named = "a scheme"
	}
	return "no API key: the Authorization header uses " + named + ", which this API does not read; " + how
}

func unauthorized(code, msg string) *apierr.Error {
	return apierr.New(http.StatusUnauthorized, code, msg)
}

// authenticate resolves the key to its account and applies the per-key and
// per-account limits of the contract.
func (a *API) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := apiKey(r)
		if key == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="vidfarm"`)
			apierr.Write(w, r, unauthorized(apierr.CodeMissingAPIKey, missingKeyMessage(r)))
			return
		}
		h := ids.HashKey(key)
		k, ok := a.fsm.KeyByHash(h)
		if !ok || subtle.ConstantTimeCompare(k.Hash[:], h[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="vidfarm", error="invalid_token"`)
			apierr.Write(w, r, unauthorized(apierr.CodeInvalidAPIKey, "the API key is not valid; check it was copied whole"))
			return
		}
		if k.RevokedAt != 0 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="vidfarm", error="invalid_token"`)
			apierr.Write(w, r, unauthorized(apierr.CodeAPIKeyRevoked, "this API key was revoked; create a new one in the app"))
			return
		}
		r, hold := withHolder(r)
		hold.p = principal{AccountID: k.AccountID, KeyID: k.ID}
		ctx := r.Context()
		if e := a.lim.checkKey(ctx, a.lim.perKey, "per API key", k.ID, k.AccountID); e != nil {
			apierr.Write(w, r, e)
			return
		}
		if e := a.lim.check(ctx, a.lim.perAccount, "per account, all keys", k.AccountID); e != nil {
			apierr.Write(w, r, e)
			return
		}
		next.ServeHTTP(w, r)
	})
}
