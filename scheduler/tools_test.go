package scheduler

import "testing"

// TestNodesWithTool counts the registered nodes that have a tool through
// registrations, a node changing its tools, a removal and a restore.
func TestNodesWithTool(t *testing.T) {
	s := newState(t, Config{})
	count := func(when string, want map[string]int) {
		t.Helper()
		for tool, n := range want {
			if got := s.NodesWithTool(tool); got != n {
				t.Fatalf("%s: %d nodes with %s, want %d", when, got, tool, n)
			}
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.UpsertNode(Node{ID: "a", CPUSlots: 1, Tools: []string{"ffmpeg", "runner:plan", "ffmpeg"}}, at(0)))
	must(s.UpsertNode(Node{ID: "b", CPUSlots: 1, Tools: []string{"ffmpeg"}}, at(0)))
	count("registered", map[string]int{"ffmpeg": 2, "runner:plan": 1, "espeak-ng": 0})
	must(s.UpsertNode(Node{ID: "a", CPUSlots: 1, Tools: []string{"ffmpeg"}}, at(1)))
	must(s.UpsertNode(Node{ID: "b", CPUSlots: 1, Tools: []string{"ffmpeg", "runner:plan"}}, at(1)))
	count("tools changed", map[string]int{"ffmpeg": 2, "runner:plan": 1})
	r, err := Restore(s.Snapshot())
	must(err)
	if got := r.NodesWithTool("runner:plan"); got != 1 {
		t.Fatalf("restored: %d nodes with runner:plan, want 1", got)
	}
	_, err = s.RemoveNode("b", at(2))
	must(err)
	count("removed", map[string]int{"ffmpeg": 1, "runner:plan": 0})
	if len(s.toolNodes) != 1 {
		t.Fatalf("counts kept for tools no node has: %v", s.toolNodes)
	}
}
