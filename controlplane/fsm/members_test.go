package fsm_test

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

func TestMembers(t *testing.T) {
	f := fsm.New()
	m := fsm.Member{ID: "n2", RaftAddr: "127.0.0.1:7002", PublicURL: "http://127.0.0.1:8002", AdminURL: "http://127.0.0.1:9002", AgentURL: "http://127.0.0.1:8102"}
	for _, tc := range []struct {
		name string
		cmd  fsm.Command
		err  error
	}{
		{"no id", &fsm.SetMember{Member: fsm.Member{RaftAddr: "x:1"}, Now: 1}, fsm.ErrInvalidCommand},
		{"not a url", &fsm.SetMember{Member: fsm.Member{ID: "n9", RaftAddr: "x:1", PublicURL: "127.0.0.1:1", AdminURL: "http://a", AgentURL: "http://b"}, Now: 1}, fsm.ErrInvalidCommand},
		{"n2", &fsm.SetMember{Member: m, Now: 5}, nil},
		{"n1", &fsm.SetMember{Member: fsm.Member{ID: "n1", RaftAddr: "127.0.0.1:7001", PublicURL: "https://a", AdminURL: "https://b", AgentURL: "https://c"}, Now: 6}, nil},
	} {
		if _, err := f.ApplyCommand(tc.cmd); !errors.Is(err, tc.err) {
			t.Fatalf("%s: err %v, want %v", tc.name, err, tc.err)
		}
	}
	got := f.Members()
	if len(got) != 2 || got[0].ID != "n1" || got[1].ID != "n2" || got[1].Updated != 5 {
		t.Fatalf("members = %+v", got)
	}
	snap := snapshotBytes(t, f)
	back := restored(t, snap)
	if !reflect.DeepEqual(back.Members(), got) || !bytes.Equal(snapshotBytes(t, back), snap) {
		t.Fatalf("members after restore = %+v", back.Members())
	}
	if gone, _ := f.ApplyCommand(&fsm.RemoveMember{ID: "n2", Now: 7}); gone != true {
		t.Fatal("removing a known member reported nothing removed")
	}
	if _, ok := f.Member("n2"); ok {
		t.Fatal("n2 still a member after RemoveMember")
	}
}
