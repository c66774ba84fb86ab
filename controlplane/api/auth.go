package api

import (
	"context"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/controlplane/ids"
)

type principal struct {
	AccountID string
	KeyID     string
}

type principalKey struct{}

func principalOf(r *http.Request) principal {
	if hold, ok := r.Context().Value(holderKey{}).(*principalHolder); ok {
		return hold.p
	}
	p, _ := r.Context().Value(principalKey{}).(principal)
	return p
}

// principalHolder lets the logging middleware, which runs outside authenticate,
// learn which account a request belonged to. Where it exists it is also where
// the handlers find the principal: authenticate fills it instead of copying
// the request once more for a context value.
type principalHolder struct{ p principal }

type holderKey struct{}

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
			apierr.Write(w, r, unauthorized(apierr.CodeMissingAPIKey,
				"no API key: send it as 'Authorization: Bearer <API_KEY>' or 'X-API-Key: <API_KEY>'"))
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
		p := principal{AccountID: k.AccountID, KeyID: k.ID}
		hold, held := r.Context().Value(holderKey{}).(*principalHolder)
		if held {
			hold.p = p
		}
		ctx := r.Context()
		if e := a.lim.checkKey(ctx, a.lim.perKey, "per API key", k.ID, k.AccountID); e != nil {
			apierr.Write(w, r, e)
			return
		}
		if e := a.lim.check(ctx, a.lim.perAccount, "per account, all keys", k.AccountID); e != nil {
			apierr.Write(w, r, e)
			return
		}
		if held {
			next.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(ctx, principalKey{}, p)))
	})
}
