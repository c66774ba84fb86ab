package raftnode

import "testing"

// TestReady: a node serves once it knows a leader and has applied what it
// has heard is committed; a commit index of 0 is not yet heard (a restarted
// follower's, until the leader's first append), whatever it has applied.
func TestReady(t *testing.T) {
	for _, tc := range []struct {
		name            string
		leader          string
		applied, commit uint64
		want            bool
	}{
		{"caught up", "n1", 67, 67, true},
		{"ahead of what it heard", "n1", 67, 60, true},
		{"behind", "n1", 21, 67, false},
		{"restarted, the commit index not heard yet", "n1", 21, 0, false},
		{"no leader", "", 67, 67, false},
		{"nothing applied", "n1", 0, 0, false},
	} {
		if got := ready(tc.leader, tc.applied, tc.commit); got != tc.want {
			t.Errorf("%s: ready = %v, want %v", tc.name, got, tc.want)
		}
	}
}
