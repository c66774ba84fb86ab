package fsm_test

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

// TestExpireSpeech: finished samples created before the cut are forgotten
// and their audio goes to the garbage list; newer ones and samples still
// being made stay; replicas and snapshots agree.
func TestExpireSpeech(t *testing.T) {
	fm, node := newFarm(t, 100)
	speak := func(id string) {
		fm.apply(&fsm.CreateSpeech{SpeechID: id, AccountID: "acct_1", Text: "Hello", VoiceID: "en-us", Now: fm.now})
	}
	speak("sp_old")
	speak("sp_pending") // never leased: stays queued
	l := fm.lease(node)
	if l.VideoID != "sp_old" {
		t.Fatalf("leased %s", l.VideoID)
	}
	fm.apply(&fsm.CompleteTask{NodeID: node, TaskID: l.TaskID, Token: l.Token, DurationSeconds: 1,
		Artifacts: map[string]string{wire.ArtifactSpeech: "videos/sp_old/speech/" + wire.ArtifactSpeech}, Now: fm.now})
	cut := fm.now + int64(time.Second)
	fm.now += int64(time.Minute)
	speak("sp_new")

	if !fm.f.SpeechExpiryDue(cut) || fm.f.SpeechExpiryDue(1) {
		t.Fatal("SpeechExpiryDue does not see exactly the old finished sample")
	}
	back := restored(t, snapshotBytes(t, fm.f))
	for _, f := range []*fsm.FSM{fm.f, back} {
		n, err := f.ApplyCommand(&fsm.ExpireSpeech{Before: cut, Now: fm.now})
		if err != nil || n != 1 {
			t.Fatalf("ExpireSpeech = %v, %v; want 1", n, err)
		}
		if _, ok := f.Speech("acct_1", "sp_old"); ok {
			t.Fatal("the old sample is still there")
		}
		for _, id := range []string{"sp_pending", "sp_new"} {
			if _, ok := f.Speech("acct_1", id); !ok {
				t.Fatalf("%s was forgotten", id)
			}
		}
		if g, _ := f.Garbage(10); !slices.Equal(g, []string{"videos/sp_old/speech/" + wire.ArtifactSpeech}) {
			t.Fatalf("garbage %v, want the old sample's audio", g)
		}
		if f.SpeechExpiryDue(cut) {
			t.Fatal("still due after expiring")
		}
	}
	if !bytes.Equal(snapshotBytes(t, fm.f), snapshotBytes(t, back)) {
		t.Fatal("replicas differ after ExpireSpeech")
	}
	if _, err := fm.f.ApplyCommand(&fsm.ExpireSpeech{Now: fm.now}); err == nil {
		t.Fatal("ExpireSpeech without a time was accepted")
	}
}
