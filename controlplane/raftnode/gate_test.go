package raftnode_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/controlplane/raftnode"
)

// The upgrade gate in Node.Apply: a command whose type some server of the
// configuration cannot apply is refused before anything reaches the log,
// with ErrNotUnderstood naming the servers; the rest goes through. The
// second server is a non-voter at an address nobody listens on: it is in
// the configuration (so the gate must count it) without being needed for a
// commit.
func TestApplyGate(t *testing.T) {
	n := open(t, t.TempDir())
	defer closeNode(t, n)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// Alone, the node goes by its own level.
	if _, err := n.Apply(ctx, &fsm.ResealWebhook{WebhookID: "wh_1", Old: "a", New: "b", Now: t0}); err != nil {
		t.Fatalf("a single node of this release refused a type it knows: %v", err)
	}
	if err := n.Raft.AddNonvoter("n2", "127.0.0.1:1", 0, 10*time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	n2 := func(understands fsm.MessageType) *fsm.SetMember {
		return &fsm.SetMember{Member: fsm.Member{ID: "n2", RaftAddr: "127.0.0.1:1", PublicURL: "http://n2", AdminURL: "http://n2:1",
			AgentURL: "http://n2:2", Understands: understands}, Now: t0}
	}
	reseal := &fsm.ResealWebhook{WebhookID: "wh_1", Old: "a", New: "b", Now: t0}
	sweep := &fsm.SweepIntermediates{Now: t0}
	for _, tc := range []struct {
		name   string
		record *fsm.SetMember // n2's record before the proposal; nil: none
		cmd    fsm.Command
		lag    []fsm.ServerLevel // nil: proposed
	}{
		{"no record: a hot command", nil, account("acct_1", 10), nil},
		{"no record: a gated command", nil, reseal, []fsm.ServerLevel{{ID: "n2", Level: 0}}},
		{"an older member", n2(fsm.ExpireSpeechType), reseal, []fsm.ServerLevel{{ID: "n2", Level: fsm.ExpireSpeechType}}},
		{"an older member: a type it knows", n2(fsm.ExpireSpeechType), &fsm.ExpireSpeech{Before: 1, Now: t0}, nil},
		{"an older member: an older type", n2(fsm.ExpireSpeechType), &fsm.BlobsDeleted{Keys: []string{"k"}, Now: t0}, nil},
		{"a member at exactly the type", n2(fsm.ResealWebhookType), reseal, nil},
		{"a member at exactly the type: the next one", n2(fsm.ResealWebhookType), sweep,
			[]fsm.ServerLevel{{ID: "n2", Level: fsm.ResealWebhookType}}},
		{"a record from before levels", n2(0), sweep, nil},
		{"upgraded", n2(fsm.SweepIntermediatesType), sweep, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.record != nil {
				apply(t, n, tc.record)
			}
			before := n.Raft.LastIndex()
			_, err := n.Apply(ctx, tc.cmd)
			if tc.lag == nil {
				if err != nil {
					t.Fatalf("%s: %v, want it proposed", tc.cmd.Type(), err)
				}
				return
			}
			var nu *raftnode.NotUnderstoodError
			if !errors.Is(err, raftnode.ErrNotUnderstood) || !errors.As(err, &nu) {
				t.Fatalf("%s: %v, want ErrNotUnderstood", tc.cmd.Type(), err)
			}
			if nu.Type != tc.cmd.Type() || !reflect.DeepEqual(nu.Members, tc.lag) || !strings.Contains(err.Error(), "n2 (") {
				t.Fatalf("refusal %+v (%v), want type %d and members %+v", nu, err, tc.cmd.Type(), tc.lag)
			}
			if after := n.Raft.LastIndex(); after != before {
				t.Fatalf("the log grew from %d to %d: a refused command was written", before, after)
			}
		})
	}
	if err := n.CheckUnderstood(fsm.SweepIntermediatesType); err != nil {
		t.Fatalf("CheckUnderstood after the upgrade: %v", err)
	}
	levels, err := n.Levels()
	if err != nil || len(levels) != 2 || levels[0] != (fsm.ServerLevel{ID: "node1", Level: fsm.Understood()}) {
		t.Fatalf("levels %+v (%v)", levels, err)
	}
	if s := n.Raft.State(); s != raft.Leader {
		t.Fatalf("state %s", s)
	}
}
