package admin

import "testing"

// Two requests hash alike only when their name, plan and credits are alike.
func TestAccountRequestHash(t *testing.T) {
	base := accountRequestHash("ab", "c", 1)
	if accountRequestHash("ab", "c", 1) != base {
		t.Fatal("one request hashes two ways")
	}
	for _, other := range [][32]byte{accountRequestHash("a", "bc", 1), accountRequestHash("ab", "c", 2), accountRequestHash("abc", "", 1)} {
		if other == base {
			t.Fatal("two requests hash alike")
		}
	}
}
