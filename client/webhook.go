package client

import (
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/webhook/signature"
)

// The webhook verifier is the control plane's own signature package, so the SDK
// and the signer cannot disagree about the format.

// SignatureHeader is the header that carries a delivery's signature.
const SignatureHeader = signature.HeaderName

// Errors of VerifyWebhook, matched with errors.Is.
var (
	ErrSignatureMissing   = signature.ErrMissing
	ErrSignatureMalformed = signature.ErrMalformed
	ErrSignatureMismatch  = signature.ErrMismatch
	// ErrSignatureExpired: the signature's time is more than the tolerance from now.
	ErrSignatureExpired = signature.ErrOutsideTolerance
)

// VerifyWebhook checks a delivery's Service-Signature header against its raw
// body and the endpoint's whsec_ secret. tolerance 0 means 5 minutes. During a
// secret rotation the header carries two v1 values; one match suffices.
func VerifyWebhook(secret, header string, body []byte, now time.Time, tolerance time.Duration) error {
	return signature.Verify(secret, header, body, now, tolerance)
}

// maxWebhookBody bounds a delivery read by VerifyWebhookRequest.
const maxWebhookBody = 1 << 20

// VerifyWebhookRequest reads r's body and verifies it with secret at the
// current time. It returns the body to decode only when the signature holds.
func VerifyWebhookRequest(r *http.Request, secret string) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxWebhookBody))
	if err != nil {
		return nil, fmt.Errorf("vidfarm: read webhook body: %w", err)
	}
	if err := VerifyWebhook(secret, r.Header.Get(SignatureHeader), body, time.Now(), 0); err != nil {
		return nil, fmt.Errorf("vidfarm: webhook: %w", err)
	}
	return body, nil
}
