package server_test

import (
	"context"
	"testing"
	"time"
)

// Raft's own measurements reach the leader's /metrics: how long a write
// waits for its quorum, and each follower's replication, labelled by the
// follower. The nodes have ids of their own: the measurements of every
// cluster in the test process land in one sink (raftMetrics), and the
// follower labels must be this cluster's.
func TestRaftReplicationMetrics(t *testing.T) {
	t.Parallel()
	nodes, leader := threeVotersNamed(t, "rm1", "rm2", "rm3")
	waitShowing(t, "an account is created on the leader", 30*time.Second, func() (bool, any) {
		_, err := nodes[leader].admin.CreateAccount(context.Background(), "raft-metrics", "pro", 100)
		return err == nil, err
	})
	want := []string{"vidfarm_raft_commit_seconds_count", "vidfarm_raft_leader_dispatch_seconds_count"}
	for id := range nodes {
		if id == leader {
			continue
		}
		for _, name := range []string{"vidfarm_raft_replication_append_entries_seconds_count",
			"vidfarm_raft_replication_append_entries_logs_total", "vidfarm_raft_replication_heartbeat_seconds_count"} {
			want = append(want, name+`{peer_id="`+id+`"}`)
		}
	}
	var page string
	waitShowing(t, "the leader's /metrics has Raft's commit time and each follower's replication", 20*time.Second, func() (bool, any) {
		page = nodes[leader].adminGet("/metrics")
		var missing []string
		for _, series := range want {
			if v, ok := metricSample(page, series); !ok || v < 1 {
				missing = append(missing, series)
			}
		}
		return len(missing) == 0, []any{missing, grepLines(page, "vidfarm_raft_")}
	})
	lintMetrics(t, page)
}
