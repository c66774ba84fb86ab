package server_test

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/vidfarm/vidfarm/controlplane/server"
)

// lockedBuffer is a log sink the server's goroutines may write at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestJoinWarnsOfPerNodeSecrets: a node that joins without the settings
// every member must share says which one it lacks, each on its own line.
func TestJoinWarnsOfPerNodeSecrets(t *testing.T) {
	t.Parallel()
	n1 := start(t, func(c *server.Config) { c.NodeID = "n1" })
	var logs lockedBuffer
	start(t, func(c *server.Config) {
		c.NodeID, c.Join, c.BlobSecret = "n2", "http://"+n1.srv.AdminAddr(), "00112233445566778899aabbccddeeff"
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	})
	out := logs.String()
	for _, want := range []string{"joining a cluster without --blob-s3-*", "joining a cluster without --agent-token"} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "without --blob-secret") {
		t.Errorf("warned of --blob-secret, which was given:\n%s", out)
	}
}
