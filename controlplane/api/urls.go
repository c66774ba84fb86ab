package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/netguard"
)

// Addresses clients give are checked by the farm's one address policy
// (package netguard), names resolved, and a refusal is 400 invalid_url with
// details.field and details.reason. Webhook targets go through
// Config.WebhookGuard (webhooks.go); the others through:
//
//   - checkClientURL, Config.Guard: pages the control plane fetches itself
//     (brand-kits/from-url);
//   - checkInputURL, the same guard with HTTPSOnly: addresses a render node
//     fetches (video image fields, logo_url, avatar file_url), which it reads
//     over https only, even under the development switch.

// checkClientURL checks an address the control plane fetches for a client.
func (a *API) checkClientURL(ctx context.Context, field, raw string) *apierr.Error {
	return checkURL(ctx, a.cfg.Guard, field, raw)
}

// checkInputURL checks an address a render node fetches for a client.
func (a *API) checkInputURL(ctx context.Context, field, raw string) *apierr.Error {
	return checkURL(ctx, a.inputGuard, field, raw)
}

func checkURL(ctx context.Context, g *netguard.Guard, field, raw string) *apierr.Error {
	bad := func(reason string) *apierr.Error {
		return apierr.New(http.StatusBadRequest, apierr.CodeInvalidURL,
			fmt.Sprintf("%s %q is not usable: %s", field, raw, reason)).With("field", field).With("reason", reason)
	}
	if raw == "" {
		return bad("the address is empty")
	}
	if len(raw) > maxURL {
		return apierr.New(http.StatusBadRequest, apierr.CodeInvalidURL, fmt.Sprintf("%s is longer than %d characters", field, maxURL)).
			With("field", field).With("reason", fmt.Sprintf("longer than %d characters", maxURL))
	}
	ctx, cancel := context.WithTimeout(ctx, urlCheckTimeout)
	defer cancel()
	_, err := g.CheckURL(ctx, raw)
	if err == nil {
		return nil
	}
	if errors.Is(err, netguard.ErrLookup) {
		return lookupFailed(field, err)
	}
	reason := err.Error()
	var re *netguard.RefusedError
	if errors.As(err, &re) {
		reason = re.Reason
	}
	return bad(reason)
}

// lookupFailed answers an address whose host could not be looked up for a
// reason that may pass (netguard.ErrLookup): the address is not refused,
// the request may be sent again.
func lookupFailed(field string, err error) *apierr.Error {
	return apierr.New(http.StatusServiceUnavailable, apierr.CodeUpstreamError,
		fmt.Sprintf("the host of %s could not be looked up just now; retry shortly", field)).
		With("field", field).With("reason", err.Error())
}
