package scheduler

import (
	"slices"
	"testing"
)

// TestSetToolsKeepsTheNode: new tools change what a node can take and the
// tool counts, but not its heartbeat or down mark.
func TestSetToolsKeepsTheNode(t *testing.T) {
	s := newState(t, Config{})
	if err := s.UpsertNode(Node{ID: "a", CPUSlots: 1, Tools: []string{"ffmpeg"}}, at(0)); err != nil {
		t.Fatal(err)
	}
	s.nodes["a"].down = true
	if err := s.SetTools("a", []string{"voice:en", "ffmpeg", "voice:en"}); err != nil {
		t.Fatal(err)
	}
	n, _ := s.Node("a")
	if !n.Down || !n.LastHeartbeat.Equal(at(0)) || !slices.Equal(n.Tools, []string{"ffmpeg", "voice:en"}) || s.NodesWithTool("voice:en") != 1 {
		t.Fatalf("after SetTools: down %v, heartbeat %v, tools %v, nodes with voice:en %d", n.Down, n.LastHeartbeat, n.Tools, s.NodesWithTool("voice:en"))
	}
	if err := s.SetTools("nope", nil); err == nil {
		t.Fatal("SetTools on an unknown node answered no error")
	}
}
