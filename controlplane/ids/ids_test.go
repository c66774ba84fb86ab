package ids

import (
	"strings"
	"testing"
)

func TestNewIsPrefixedAndUnique(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 1000; i++ {
		id := New("vid")
		if !strings.HasPrefix(id, "vid_") || len(id) != len("vid_")+26 {
			t.Fatalf("id %q: want vid_ and 26 base32 characters", id)
		}
		if strings.Trim(id[4:], "abcdefghijklmnopqrstuvwxyz234567") != "" {
			t.Fatalf("id %q has characters outside lowercase base32", id)
		}
		if seen[id] {
			t.Fatalf("id %q repeated", id)
		}
		seen[id] = true
	}
}

func TestAPIKeys(t *testing.T) {
	key, hash := NewAPIKey()
	if !strings.HasPrefix(key, APIKeyPrefix) || len(key) != len(APIKeyPrefix)+52 {
		t.Fatalf("key %q: want %s and 52 base32 characters (256 bits)", key, APIKeyPrefix)
	}
	if HashKey(key) != hash {
		t.Fatal("the hash returned with a key is not HashKey of it")
	}
	other, otherHash := NewAPIKey()
	if other == key || otherHash == hash {
		t.Fatal("two keys collide")
	}
	if hint := KeyHint(key); hint != key[:len(APIKeyPrefix)+4] {
		t.Fatalf("hint %q", hint)
	}
	for _, bad := range []string{"", "vf_live_", "sk_live_abcdef", "vf_live_ab"} {
		if h := KeyHint(bad); h != "" {
			t.Errorf("KeyHint(%q) = %q, want empty", bad, h)
		}
	}
}
