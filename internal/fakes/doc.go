// Package fakes is test support: fake model servers that follow the
// public APIs vidfarm speaks (a Cog container's HTTP API; ComfyUI's
// server.py routes and websocket messages; the OpenAI chat completions and
// speech endpoints) and test inputs (BlackPNG, an image of any size in a few KB), so that the pipeline and agent packages' tests and the
// end-to-end tests of cmd/vidfarm drive the same fakes. Only tests import it; no product code does. Go cannot
// compile a package into tests only, so this is an ordinary package under
// internal/, kept out of every binary by not being imported.
package fakes

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
)

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func randomUUID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
