package raftnode

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// Pre-vote needs the transport's help: raft turns it off silently for a
// transport that cannot send pre-vote requests.
var _ raft.WithPreVote = (*raft.NetworkTransport)(nil)

func TestTimingDefaults(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name    string
		in, out Timing
		wantErr bool
	}{
		{"zero is the default", Timing{}, DefaultTiming, false},
		{"heartbeat only: lease follows the default, capped", Timing{Heartbeat: 300 * ms}, Timing{Heartbeat: 300 * ms, Election: DefaultTiming.Election, LeaderLease: 300 * ms}, false},
		{"all set", Timing{Heartbeat: 2 * time.Second, Election: 3 * time.Second, LeaderLease: time.Second}, Timing{Heartbeat: 2 * time.Second, Election: 3 * time.Second, LeaderLease: time.Second}, false},
		{"lease longer than heartbeat", Timing{Heartbeat: 500 * ms, Election: 500 * ms, LeaderLease: 600 * ms}, Timing{}, true},
		{"too short", Timing{Heartbeat: ms, Election: ms, LeaderLease: ms}, Timing{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.in.withDefaults()
			if (err != nil) != tc.wantErr {
				t.Fatalf("withDefaults(%+v) error %v, want error %v", tc.in, err, tc.wantErr)
			}
			if !tc.wantErr && got != tc.out {
				t.Errorf("withDefaults(%+v) = %+v, want %+v", tc.in, got, tc.out)
			}
		})
	}
	if DefaultTiming.LeaderLease > DefaultTiming.Heartbeat {
		t.Errorf("DefaultTiming's lease %s exceeds its heartbeat timeout %s", DefaultTiming.LeaderLease, DefaultTiming.Heartbeat)
	}
}
