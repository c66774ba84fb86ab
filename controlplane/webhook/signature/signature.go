// Package signature signs and verifies webhook deliveries. The control plane signs
// every delivery with Header; receivers written in Go import this package and call
// Verify on each request before trusting its body.
//
// The header is Service-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of
// "<t>.<raw body>">, keyed with the endpoint's whsec_ secret. Verify recomputes it
// over the raw body, compares in constant time and refuses timestamps more than the
// tolerance away from now, so a captured delivery cannot be replayed later.
package signature

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// HeaderName is the HTTP header that carries the signature.
const HeaderName = "Service-Signature"

// DefaultTolerance is how far a signature's time may be from the receiver's clock.
const DefaultTolerance = 5 * time.Minute

var (
	// ErrMissing means the request carries no signature header.
	ErrMissing = errors.New("webhook signature header missing")
	// ErrMalformed means the header is not t=<unix>,v1=<hex>.
	ErrMalformed = errors.New("webhook signature header malformed")
	// ErrMismatch means no v1 signature matches the body: wrong secret, or the body
	// was changed.
	ErrMismatch = errors.New("webhook signature does not match")
	// ErrOutsideTolerance means the signature's time is too far from now: a replay,
	// or a badly set clock.
	ErrOutsideTolerance = errors.New("webhook signature timestamp outside tolerance")
)

// Compute returns the hex HMAC-SHA256 of "<t>.<body>" keyed with secret.
func Compute(secret string, t int64, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(strconv.FormatInt(t, 10)))
	m.Write([]byte{'.'})
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// Header returns the Service-Signature value for body signed at t.
func Header(secret string, t time.Time, body []byte) string { return HeaderAll(t, body, secret) }

// HeaderAll returns the Service-Signature value for body signed at t with
// each secret, one v1 value each in that order: t=<unix>,v1=<hex>,v1=<hex>.
// While a secret is rotated the sender signs with the new one and the old
// one, so a receiver that knows either accepts the delivery (as Stripe's
// Stripe-Signature does).
func HeaderAll(t time.Time, body []byte, secrets ...string) string {
	ts := t.Unix()
	var b strings.Builder
	b.WriteString("t=" + strconv.FormatInt(ts, 10))
	for _, s := range secrets {
		b.WriteString(",v1=" + Compute(s, ts, body))
	}
	return b.String()
}

// Verify checks header against body and secret at now. Tolerance 0 means
// DefaultTolerance. Several v1 values are accepted (any one matching suffices), so
// a sender may sign with an old and a new secret while rotating.
func Verify(secret, header string, body []byte, now time.Time, tolerance time.Duration) error {
	if header == "" {
		return ErrMissing
	}
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	var ts int64
	var haveT bool
	var sigs [][]byte
	for part := range strings.SplitSeq(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return fmt.Errorf("%w: %q is not key=value", ErrMalformed, part)
		}
		switch k {
		case "t":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || haveT {
				return fmt.Errorf("%w: t=%q", ErrMalformed, v)
			}
			ts, haveT = n, true
		case "v1":
			b, err := hex.DecodeString(v)
			if err != nil || len(b) != sha256.Size {
				return fmt.Errorf("%w: v1 is not 64 hex digits", ErrMalformed)
			}
			sigs = append(sigs, b)
		}
	}
	if !haveT || len(sigs) == 0 {
		return fmt.Errorf("%w: want t=<unix>,v1=<hex>", ErrMalformed)
	}
	want, _ := hex.DecodeString(Compute(secret, ts, body))
	matched := false
	for _, s := range sigs {
		// Every candidate is compared, so the time taken does not say which matched.
		if hmac.Equal(s, want) {
			matched = true
		}
	}
	if !matched {
		return ErrMismatch
	}
	if d := now.Sub(time.Unix(ts, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("%w: signed %s from now, tolerance %s", ErrOutsideTolerance, d.Round(time.Second), tolerance)
	}
	return nil
}
