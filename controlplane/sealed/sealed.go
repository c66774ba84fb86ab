// Package sealed encrypts the secrets the replicated state has to keep but
// its snapshots, backups and Raft log should not show in the clear: webhook
// signing secrets, which any future leader needs in order to sign. A
// secret is sealed with AES-256-GCM under a key every control-plane node
// is given (--secrets-key), bound to the record it belongs to, and stored
// as "sealed:v1:" and the base64 of nonce and ciphertext.
//
// Open takes sealed and plain values alike, so state written before a key
// was set keeps working; a node without the key cannot open a sealed
// value and says so. A Key may hold older keys besides the current one:
// values they sealed still open, and Current tells which values to seal
// again (the control plane's leader does, so an old key can then be
// dropped, and plain values become sealed).
package sealed

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// prefix marks a sealed value, with the format's version.
const prefix = "sealed:v1:"

// KeyBytes is the length of a key: AES-256.
const KeyBytes = 32

var (
	// ErrNoKey means a sealed value was met by a node that has no key.
	ErrNoKey = errors.New("sealed: the value is sealed and this node has no secrets key")
	// ErrOpen means a sealed value did not open: another key, another
	// record, or a damaged value.
	ErrOpen = errors.New("sealed: the value does not open with this key")
	// ErrKey means a key is not 64 hexadecimal digits.
	ErrKey = errors.New("sealed: a secrets key is 64 hexadecimal digits (32 bytes)")
)

// Key seals and opens values. A nil *Key seals nothing: Seal returns its
// input and Open takes plain values only.
type Key struct {
	aead cipher.AEAD   // the current key: it seals
	old  []cipher.AEAD // earlier keys: they only open
}

// ParseKey reads a key written as 64 hexadecimal digits (for example the
// output of `openssl rand -hex 32`), or several separated by commas: the
// first is the current key, the others earlier ones.
func ParseKey(s string) (*Key, error) {
	var k *Key
	for part := range strings.SplitSeq(s, ",") {
		aead, err := parseOne(part)
		if err != nil {
			return nil, err
		}
		if k == nil {
			k = &Key{aead: aead}
		} else {
			k.old = append(k.old, aead)
		}
	}
	return k, nil
}

func parseOne(s string) (cipher.AEAD, error) {
	raw, err := hex.DecodeString(strings.TrimSpace(s))
	if err != nil || len(raw) != KeyBytes {
		return nil, ErrKey
	}
	block, err := aes.NewCipher(raw)
	if err != nil {
		return nil, fmt.Errorf("sealed: %w", err)
	}
	return cipher.NewGCM(block)
}

// IsSealed reports whether v is a sealed value.
func IsSealed(v string) bool { return strings.HasPrefix(v, prefix) }

// Seal encrypts plain for the record named by context (a webhook id), with
// a fresh random nonce; a nil key returns plain.
func (k *Key) Seal(plain, context string) string {
	if k == nil {
		return plain
	}
	nonce := make([]byte, k.aead.NonceSize(), k.aead.NonceSize()+len(plain)+k.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		panic(fmt.Sprintf("sealed: no randomness: %v", err)) // crypto/rand does not fail on supported systems
	}
	return prefix + base64.RawStdEncoding.EncodeToString(k.aead.Seal(nonce, nonce, []byte(plain), []byte(context)))
}

// Open returns the plain value of v, sealed for context (by the current
// key or an earlier one) or plain.
func (k *Key) Open(v, context string) (string, error) {
	plain, _, err := k.OpenCurrent(v, context)
	return plain, err
}

// Current reports whether v is sealed for context by the current key; a
// value for which it is false (plain, or sealed by an earlier key) should
// be sealed again. With a nil key every value is current.
func (k *Key) Current(v, context string) bool {
	if k == nil {
		return true
	}
	_, current, err := k.OpenCurrent(v, context)
	return err == nil && current
}

// OpenCurrent is Open that also reports whether the current key sealed v
// (Current), for a caller that seals again what it opened.
func (k *Key) OpenCurrent(v, context string) (plain string, current bool, err error) {
	if !IsSealed(v) {
		return v, false, nil
	}
	if k == nil {
		return "", false, ErrNoKey
	}
	raw, err := base64.RawStdEncoding.DecodeString(v[len(prefix):])
	if err != nil {
		return "", false, ErrOpen
	}
	for i, aead := range append([]cipher.AEAD{k.aead}, k.old...) {
		n := aead.NonceSize()
		if len(raw) < n+aead.Overhead() {
			return "", false, ErrOpen
		}
		if plain, err := aead.Open(nil, raw[:n], raw[n:], []byte(context)); err == nil {
			return string(plain), i == 0, nil
		}
	}
	return "", false, ErrOpen
}
