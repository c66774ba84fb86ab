package server_test

import (
	"testing"

	"github.com/vidfarm/vidfarm/controlplane/server"
)

// TestJoinWarnsOfPerNodeSecrets: a node that joins without the settings
// every member must share says which one it lacks, each on its own line.
func TestJoinWarnsOfPerNodeSecrets(t *testing.T) {
	t.Parallel()
	n1 := start(t, func(c *server.Config) { c.NodeID = "n1" })
	var logs logBuffer
	start(t, withLog(&logs), func(c *server.Config) {
		c.NodeID, c.Join, c.BlobSecret = "n2", "http://"+n1.srv.AdminAddr(), "00112233445566778899aabbccddeeff"
	})
	for msg, want := range map[string]int{
		"joining a cluster without --blob-s3-*: each node keeps its files on its own disk, where the others cannot read them; give every node the same bucket":                         1,
		"joining a cluster without --agent-token: this node generates its own, and an agent given another node's is refused here once this node leads; give every node the same token": 1,
		"joining a cluster without --blob-secret: file URLs signed by one node will not verify on the others; give every node the same secret":                                         0,
	} {
		if got := len(logs.lines(msg)); got != want {
			t.Errorf("%d lines %q, want %d", got, msg, want)
		}
	}
}
