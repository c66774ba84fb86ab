package server

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

func TestCheckTokens(t *testing.T) {
	long := strings.Repeat("ab", 16)
	cases := []struct {
		admin, agent string
		refused      bool
		warnings     int
	}{
		{long, long, false, 0},
		{long, "", false, 0}, // the node makes its own agent token
		{"change-me-to-a-long-random-string", long, true, 0},
		{long, "change-me-to-another-long-random-string", true, 0},
		{"short", long, false, 1},
		{"short", "tiny", false, 2},
	}
	for _, tc := range cases {
		var logs bytes.Buffer
		err := checkTokens(Config{AdminToken: tc.admin, AgentToken: tc.agent, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		if errors.Is(err, ErrWeakToken) != tc.refused {
			t.Errorf("%q, %q: %v, want refused %v", tc.admin, tc.agent, err, tc.refused)
		}
		if n := strings.Count(logs.String(), "level=WARN"); n != tc.warnings {
			t.Errorf("%q, %q: %d warnings (%s), want %d", tc.admin, tc.agent, n, logs.String(), tc.warnings)
		}
	}
}
