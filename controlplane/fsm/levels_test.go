package fsm_test

import (
	"reflect"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

func member(id string, understands fsm.MessageType) fsm.Member {
	return fsm.Member{ID: id, RaftAddr: id + ":7000", PublicURL: "http://" + id, AdminURL: "http://" + id + ":1",
		AgentURL: "http://" + id + ":2", Understands: understands}
}

// The gate's rule, case by case: which servers cannot apply a type.
func TestNotUnderstanding(t *testing.T) {
	lv := func(id string, l fsm.MessageType) fsm.ServerLevel { return fsm.ServerLevel{ID: id, Level: l} }
	for _, tc := range []struct {
		name   string
		typ    fsm.MessageType
		levels []fsm.ServerLevel
		want   []fsm.ServerLevel
	}{
		{"a hot command is never gated", fsm.CreateVideoType, []fsm.ServerLevel{lv("n1", 51), lv("n2", 0)}, nil},
		{"the membership commands are never gated", fsm.SetMemberType, []fsm.ServerLevel{lv("n2", 0)}, nil},
		{"every member understands it", fsm.ResealWebhookType, []fsm.ServerLevel{lv("n1", 51), lv("n2", 50), lv("n3", 51)}, nil},
		{"one old member", fsm.ResealWebhookType, []fsm.ServerLevel{lv("n1", 51), lv("n2", 49), lv("n3", 51)}, []fsm.ServerLevel{lv("n2", 49)}},
		{"two old members", fsm.SweepIntermediatesType, []fsm.ServerLevel{lv("n1", 49), lv("n2", 50), lv("n3", 51)},
			[]fsm.ServerLevel{lv("n1", 49), lv("n2", 50)}},
		{"a member that never reported", fsm.BlobsDeletedType, []fsm.ServerLevel{lv("n1", 51), lv("n4", 0)}, []fsm.ServerLevel{lv("n4", 0)}},
		{"a type newer than every binary", fsm.MessageType(52), []fsm.ServerLevel{lv("n1", 51)}, []fsm.ServerLevel{lv("n1", 51)}},
		{"the first gated type", fsm.AlwaysUnderstood + 1, []fsm.ServerLevel{lv("n1", fsm.AlwaysUnderstood)},
			[]fsm.ServerLevel{lv("n1", fsm.AlwaysUnderstood)}},
		{"no servers", fsm.ResealWebhookType, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fsm.NotUnderstanding(tc.typ, tc.levels); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("NotUnderstanding(%d) = %+v, want %+v", tc.typ, got, tc.want)
			}
		})
	}
}

func TestLowestLevel(t *testing.T) {
	for _, tc := range []struct {
		levels []fsm.MessageType
		want   fsm.MessageType
	}{
		{nil, 0},
		{[]fsm.MessageType{51}, 51},
		{[]fsm.MessageType{51, 49, 50}, 49},
		{[]fsm.MessageType{51, 0}, 0},
	} {
		var ls []fsm.ServerLevel
		for i, l := range tc.levels {
			ls = append(ls, fsm.ServerLevel{ID: string(rune('a' + i)), Level: l})
		}
		if got := fsm.LowestLevel(ls); got != tc.want {
			t.Errorf("LowestLevel(%v) = %d, want %d", tc.levels, got, tc.want)
		}
	}
}

// Each server's level comes from its record, absent meaning the baseline
// release; no record means nothing gated is understood; the node asking
// goes by its own binary, whatever its record says.
func TestServerLevels(t *testing.T) {
	f := fsm.New()
	for _, m := range []fsm.Member{member("n1", 49), member("n2", 0), member("n3", 51), member("self", 49)} {
		if _, err := f.ApplyCommand(&fsm.SetMember{Member: m, Now: 1}); err != nil {
			t.Fatal(err)
		}
	}
	got := f.ServerLevels([]string{"n1", "n2", "n3", "n4", "self"}, "self")
	want := []fsm.ServerLevel{{ID: "n1", Level: 49}, {ID: "n2", Level: fsm.Baseline}, {ID: "n3", Level: 51}, {ID: "n4", Level: 0},
		{ID: "self", Level: fsm.Understood()}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("levels = %+v, want %+v", got, want)
	}
	if m, _ := f.Member("n2"); m.Level() != fsm.Baseline || m.Understands != 0 {
		t.Fatalf("a record without a level: %+v, level %d", m, m.Level())
	}
}

// A SetMember written by a release before levels has no "understands" key:
// it decodes, and the member stands at the baseline. The level survives a
// snapshot.
func TestMemberLevelIsOptional(t *testing.T) {
	type oldMember struct {
		ID        string `msgpack:"id"`
		RaftAddr  string `msgpack:"raft"`
		PublicURL string `msgpack:"public"`
		AdminURL  string `msgpack:"admin"`
		AgentURL  string `msgpack:"agent"`
		Updated   int64  `msgpack:"updated"`
	}
	type oldSetMember struct {
		Member oldMember `msgpack:"member"`
		Now    int64     `msgpack:"now"`
	}
	payload, err := msgpack.Marshal(oldSetMember{Member: oldMember{ID: "n1", RaftAddr: "a:1", PublicURL: "http://a", AdminURL: "http://b", AgentURL: "http://c"}, Now: 5})
	if err != nil {
		t.Fatal(err)
	}
	cmd, err := fsm.Decode(append([]byte{byte(fsm.SetMemberType)}, payload...))
	if err != nil {
		t.Fatalf("decode an old SetMember: %v", err)
	}
	f := fsm.New()
	if _, err := f.ApplyCommand(cmd); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ApplyCommand(&fsm.SetMember{Member: member("n2", 50), Now: 6}); err != nil {
		t.Fatal(err)
	}
	back := restored(t, snapshotBytes(t, f))
	for id, want := range map[string]fsm.MessageType{"n1": fsm.Baseline, "n2": 50} {
		m, ok := back.Member(id)
		if !ok || m.Level() != want {
			t.Errorf("%s after restore: %+v (level %d), want level %d", id, m, m.Level(), want)
		}
	}
	// And an old binary reading a new record skips the key it does not know.
	raw, err := msgpack.Marshal(member("n2", 50))
	if err != nil {
		t.Fatal(err)
	}
	var old oldMember
	if err := msgpack.Unmarshal(raw, &old); err != nil || old.ID != "n2" {
		t.Fatalf("an old binary reads a new record as %+v (%v)", old, err)
	}
}
