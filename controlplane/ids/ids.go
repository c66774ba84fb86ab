// Package ids makes the random identifiers and secrets the leader stamps into
// commands: prefixed ids (vid_, acct_, key_, fld_, req_) and API keys.
package ids

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"strings"
)

var enc = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// New returns prefix_ followed by 128 random bits in lowercase base32.
func New(prefix string) string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return prefix + "_" + enc.EncodeToString(b[:])
}

// APIKeyPrefix starts every API key, so leaked keys are easy to recognise and scan for.
const APIKeyPrefix = "vf_live_"

// NewAPIKey returns a new secret key (256 random bits) and its SHA-256 hash.
func NewAPIKey() (key string, hash [32]byte) {
	var b [32]byte
	_, _ = rand.Read(b[:])
	key = APIKeyPrefix + enc.EncodeToString(b[:])
	return key, HashKey(key)
}

// HashKey is how keys are stored. Keys carry 256 random bits, so a fast hash is
// enough: there is nothing to brute-force.
func HashKey(key string) [32]byte { return sha256.Sum256([]byte(key)) }

// KeyHint is the part of a key safe to show in listings.
func KeyHint(key string) string {
	if !strings.HasPrefix(key, APIKeyPrefix) || len(key) < len(APIKeyPrefix)+4 {
		return ""
	}
	return key[:len(APIKeyPrefix)+4]
}

// WebhookSecretPrefix starts every webhook signing secret.
const WebhookSecretPrefix = "whsec_"

// NewWebhookSecret returns a webhook signing secret: whsec_ and 256 random bits.
func NewWebhookSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return WebhookSecretPrefix + enc.EncodeToString(b[:])
}
