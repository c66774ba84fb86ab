package sealed_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/vidfarm/vidfarm/controlplane/sealed"
)

const hexKey = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

func mustKey(t *testing.T, s string) *sealed.Key {
	t.Helper()
	k, err := sealed.ParseKey(s)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestSealOpen(t *testing.T) {
	k := mustKey(t, hexKey)
	other := mustKey(t, strings.Repeat("ab", 32))
	const secret = "whsec_0123456789abcdef"
	v := k.Seal(secret, "whk_1")
	if !sealed.IsSealed(v) || strings.Contains(v, secret) {
		t.Fatalf("sealed value %q", v)
	}
	if v == k.Seal(secret, "whk_1") {
		t.Fatal("two seals of the same value are equal: the nonce is not fresh")
	}
	tampered := v[:len(v)-2] + "AA"
	if v[len(v)-2:] == "AA" {
		tampered = v[:len(v)-2] + "BB"
	}
	tests := []struct {
		name    string
		key     *sealed.Key
		v, ctx  string
		want    string
		wantErr error
	}{
		{"round trip", k, v, "whk_1", secret, nil},
		{"plain value passes", k, secret, "whk_1", secret, nil},
		{"plain value, no key", nil, secret, "whk_1", secret, nil},
		{"another record", k, v, "whk_2", "", sealed.ErrOpen},
		{"another key", other, v, "whk_1", "", sealed.ErrOpen},
		{"tampered", k, tampered, "whk_1", "", sealed.ErrOpen},
		{"truncated", k, "sealed:v1:AAAA", "whk_1", "", sealed.ErrOpen},
		{"not base64", k, "sealed:v1:***", "whk_1", "", sealed.ErrOpen},
		{"sealed, no key", nil, v, "whk_1", "", sealed.ErrNoKey},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.key.Open(tc.v, tc.ctx)
			if !errors.Is(err, tc.wantErr) || got != tc.want {
				t.Fatalf("Open = %q, %v; want %q, %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
	var none *sealed.Key
	if none.Seal(secret, "whk_1") != secret {
		t.Fatal("a nil key sealed")
	}
}

func TestParseKey(t *testing.T) {
	for _, bad := range []string{"", "00", strings.Repeat("zz", 32), hexKey + "00", hexKey[:62]} {
		if _, err := sealed.ParseKey(bad); !errors.Is(err, sealed.ErrKey) {
			t.Errorf("ParseKey(%q) = %v, want ErrKey", bad, err)
		}
	}
	if _, err := sealed.ParseKey(" " + hexKey + "\n"); err != nil {
		t.Fatalf("a key with surrounding white space (as read from a file): %v", err)
	}
}

// TestKeyRotation: with "new,old" values sealed by either open, only the
// new key's are current, and Seal uses the new key.
func TestKeyRotation(t *testing.T) {
	oldHex, newHex := hexKey, strings.Repeat("cd", 32)
	oldKey := mustKey(t, oldHex)
	both := mustKey(t, newHex+","+oldHex)
	newOnly := mustKey(t, newHex)
	byOld := oldKey.Seal("whsec_a", "whk_1")
	byNew := both.Seal("whsec_a", "whk_1")
	for name, v := range map[string]string{"sealed by the old key": byOld, "sealed by the new key": byNew} {
		if got, err := both.Open(v, "whk_1"); err != nil || got != "whsec_a" {
			t.Errorf("%s: Open = %q, %v", name, got, err)
		}
	}
	if both.Current(byOld, "whk_1") || !both.Current(byNew, "whk_1") || both.Current("whsec_plain", "whk_1") {
		t.Error("Current: want only the new key's seal current")
	}
	if _, err := newOnly.Open(byNew, "whk_1"); err != nil {
		t.Errorf("the new key alone does not open its own seal: %v", err)
	}
	if _, err := newOnly.Open(byOld, "whk_1"); !errors.Is(err, sealed.ErrOpen) {
		t.Errorf("a dropped key's seal opened: %v", err)
	}
	var none *sealed.Key
	if !none.Current("whsec_plain", "whk_1") {
		t.Error("with no key, a plain value is not current")
	}
	if _, err := sealed.ParseKey(newHex + ",nothex"); !errors.Is(err, sealed.ErrKey) {
		t.Errorf("a bad older key: %v", err)
	}
}
