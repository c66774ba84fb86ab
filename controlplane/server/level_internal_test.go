package server

import (
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// TestCheckLevel: a data directory whose every member ran a newer release
// than this binary is refused before Raft replays a log this binary could
// stop on; one where some member still runs this release (a rollback
// mid-upgrade) is not, nor a state with no member records.
func TestCheckLevel(t *testing.T) {
	newer := fsm.Understood() + 1
	for _, tc := range []struct {
		name    string
		levels  []fsm.MessageType
		refused bool
	}{
		{"no member records", nil, false},
		{"every member on this release", []fsm.MessageType{fsm.Understood(), fsm.Understood()}, false},
		{"one member upgraded (rollback mid-upgrade)", []fsm.MessageType{newer, fsm.Understood()}, false},
		{"every member upgraded", []fsm.MessageType{newer, newer, newer}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := fsm.New()
			for i, lvl := range tc.levels {
				m := fsm.Member{ID: string(rune('a' + i)), RaftAddr: "127.0.0.1:7000", PublicURL: "http://127.0.0.1:8080", AdminURL: "http://127.0.0.1:8081", AgentURL: "http://127.0.0.1:8082", Understands: lvl}
				data, err := fsm.Encode(&fsm.SetMember{Member: m, Now: 1})
				if err != nil {
					t.Fatal(err)
				}
				if r, ok := f.Apply(&raft.Log{Index: uint64(i + 1), Type: raft.LogCommand, Data: data}).(*fsm.Result); !ok || r.Err != nil {
					t.Fatalf("set member: %+v", r)
				}
			}
			err := checkLevel(f)
			if tc.refused != (err != nil) || err != nil && !strings.Contains(err.Error(), "start that release") {
				t.Fatalf("checkLevel: %v, want refused %t", err, tc.refused)
			}
		})
	}
}
