package fsm

import (
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
)

// baselineTypes are the types of the release before levels: every one a
// member with no recorded level understands (Baseline).
var baselineTypes = []MessageType{1, 2, 3, 4, 5, 6, 7, 8, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25,
	28, 29, 30, 31, 32, 33, 34, 38, 39, 40, 41, 46, 47, 48, 49, 50, 51}

// Levels compare type numbers, so no command may ever take a number at or
// below Baseline that the baseline release did not have: an older member
// would count as understanding it.
func TestNoNewTypeBelowTheBaseline(t *testing.T) {
	for i, e := range registry {
		if MessageType(i) > Baseline || e.new == nil {
			continue
		}
		if !slices.Contains(baselineTypes, MessageType(i)) {
			t.Errorf("type %d (%s) fills a hole below the baseline %d: take the number after the highest (registry.go)", i, e.name, Baseline)
		}
	}
	if understood != Understood() || Understood() < Baseline {
		t.Errorf("this binary understands up to %d, below the baseline %d", Understood(), Baseline)
	}
}

// withHidden hides the types above `above` for one test, as
// -ldflags "-X .../fsm.hideAbove=..." does for a whole binary.
func withHidden(t *testing.T, above string) MessageType {
	t.Helper()
	saved := registry
	t.Cleanup(func() { registry = saved })
	return hide(above)
}

func TestHideAbove(t *testing.T) {
	for _, tc := range []struct {
		above string
		want  MessageType // 0: hide panics
	}{
		{"", Understood()},
		{"51", SweepIntermediatesType},
		{"200", Understood()},
		{"49", ExpireSpeechType},
		{"47", RemoveMemberType},
		{"46", 0}, // would hide the membership commands
		{"0", 0},
		{"256", 0},
		{"fifty", 0},
		{"-1", 0},
	} {
		t.Run("hideAbove="+tc.above, func(t *testing.T) {
			if tc.want == 0 {
				defer func() {
					if recover() == nil {
						t.Fatalf("hideAbove=%q was accepted", tc.above)
					}
				}()
			}
			if got := withHidden(t, tc.above); got != tc.want {
				t.Fatalf("hideAbove=%q: level %d, want %d", tc.above, got, tc.want)
			}
		})
	}
}

// A binary that hides a type cannot decode it, so it panics on a log entry
// of that type rather than let its state diverge: which is why the leader
// must not propose it while such a member remains.
func TestHiddenTypePanicsTheApply(t *testing.T) {
	entry, err := Encode(&ResealWebhook{WebhookID: "wh_1", Old: "a", New: "b", Now: 1})
	if err != nil {
		t.Fatal(err)
	}
	older, err := Encode(&ExpireSpeech{Before: 1, Now: 1})
	if err != nil {
		t.Fatal(err)
	}
	withHidden(t, "49")
	if ResealWebhookType.String() != "reseal_webhook" {
		t.Errorf("a hidden type prints as %q: it keeps its name for logs", ResealWebhookType)
	}
	if _, err := Decode(entry); err == nil {
		t.Fatal("a binary hiding type 50 decoded it")
	}
	f := New()
	f.Apply(&raft.Log{Index: 1, Type: raft.LogCommand, Data: older}) // 49 is still understood
	defer func() {
		r := recover()
		if r == nil || !strings.Contains(r.(string), "unknown message type 50") {
			t.Fatalf("apply of a hidden type: recovered %v, want a panic naming type 50", r)
		}
	}()
	f.Apply(&raft.Log{Index: 2, Type: raft.LogCommand, Data: entry})
}
