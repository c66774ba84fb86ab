// Package blob owns where rendered files live and how clients reach them: the
// HMAC-signed, expiring URLs under /files/ on the public listener.
package blob

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"
)

var (
	// ErrBadSignature means a file URL was altered or signed with another key.
	ErrBadSignature = errors.New("file url signature does not match")
	// ErrExpired means a file URL's expiry has passed.
	ErrExpired = errors.New("file url has expired")
)

// Signer signs and checks file URLs. The key is the server's blob secret.
type Signer struct {
	Key     []byte
	BaseURL string // public base URL, e.g. http://127.0.0.1:8080
}

func (s Signer) mac(path string, exp int64) string {
	m := hmac.New(sha256.New, s.Key)
	fmt.Fprintf(m, "%s\n%d", path, exp)
	return hex.EncodeToString(m.Sum(nil))
}

// URL returns the absolute signed URL of path (which starts with /files/), valid until exp.
func (s Signer) URL(path string, exp time.Time) string {
	e := exp.Unix()
	return s.BaseURL + path + "?expires=" + strconv.FormatInt(e, 10) + "&signature=" + s.mac(path, e)
}

// Verify checks the query of a request for path at time now.
func (s Signer) Verify(path string, q url.Values, now time.Time) error {
	exp, err := strconv.ParseInt(q.Get("expires"), 10, 64)
	if err != nil {
		return fmt.Errorf("%w: missing or malformed expires", ErrBadSignature)
	}
	sig, err := hex.DecodeString(q.Get("signature"))
	if err != nil {
		return fmt.Errorf("%w: malformed signature", ErrBadSignature)
	}
	want, _ := hex.DecodeString(s.mac(path, exp))
	if !hmac.Equal(sig, want) {
		return ErrBadSignature
	}
	if now.Unix() > exp {
		return ErrExpired
	}
	return nil
}

// putPrefix separates the signatures of uploads from those of downloads: a GET
// URL of a path can never be replayed as a PUT of it.
const putPrefix = "PUT "

// PutURL returns the absolute signed URL that lets its holder PUT the bytes of
// path (which starts with /files/) until exp; a GET of the same path needs its
// own URL from URL.
func (s Signer) PutURL(path string, exp time.Time) string {
	e := exp.Unix()
	return s.BaseURL + path + "?expires=" + strconv.FormatInt(e, 10) + "&signature=" + s.mac(putPrefix+path, e)
}

// VerifyPut checks the query of a PUT of path at time now.
func (s Signer) VerifyPut(path string, q url.Values, now time.Time) error {
	return s.Verify(putPrefix+path, q, now)
}
