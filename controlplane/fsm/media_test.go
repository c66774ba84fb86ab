package fsm_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/scheduler"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

func promptAvatar(id, account string, now int64) *fsm.CreateAvatar {
	return &fsm.CreateAvatar{Avatar: fsm.Avatar{ID: id, AccountID: account, Kind: fsm.AvatarKindPrompt, Name: "Host", Prompt: "a woman in red"}, Now: now}
}

func TestCreateAvatarRefusals(t *testing.T) {
	fm, _ := newFarm(t, 0)
	photo := func(url string, consent bool) *fsm.CreateAvatar {
		return &fsm.CreateAvatar{Avatar: fsm.Avatar{ID: "av_p", AccountID: "acct_1", Kind: fsm.AvatarKindPhoto, FileURL: url}, Consent: consent, Now: fm.now}
	}
	fm.apply(promptAvatar("av_1", "acct_1", fm.now))
	for name, tc := range map[string]struct {
		c    fsm.Command
		want error
	}{
		"unknown account": {promptAvatar("av_2", "acct_x", fm.now), fsm.ErrAccountNotFound},
		"taken id":        {promptAvatar("av_1", "acct_1", fm.now), fsm.ErrInvalidCommand},
		"no prompt":       {&fsm.CreateAvatar{Avatar: fsm.Avatar{ID: "av_3", AccountID: "acct_1", Kind: fsm.AvatarKindPrompt}}, fsm.ErrInvalidCommand},
		"no consent":      {photo("https://example.com/me.jpg", false), fsm.ErrInvalidCommand},
		"no file":         {photo("", true), fsm.ErrInvalidCommand},
		"bad kind":        {&fsm.CreateAvatar{Avatar: fsm.Avatar{ID: "av_4", AccountID: "acct_1", Kind: "sketch", Prompt: "x"}}, fsm.ErrInvalidCommand},
		"speech no text":  {&fsm.CreateSpeech{SpeechID: "sp_1", AccountID: "acct_1", VoiceID: "en"}, fsm.ErrInvalidCommand},
		"speech account":  {&fsm.CreateSpeech{SpeechID: "sp_1", AccountID: "acct_x", Text: "hi"}, fsm.ErrAccountNotFound},
	} {
		_, err := fm.f.ApplyCommand(tc.c)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
	if n := len(fm.f.Avatars("acct_1")); n != 1 {
		t.Fatalf("refused commands left %d avatars, want 1", n)
	}
}

// An avatar goes pending → processing → ready through its one farm task;
// a speech sample queued → processing → completed, ahead of queued videos.
func TestMediaJobsThroughTheFarm(t *testing.T) {
	fm, node := newFarm(t, 100)
	fm.apply(&fsm.CreateVideo{VideoID: "vid_1", AccountID: "acct_1", Price: 3, Now: fm.now, Spec: autoSpec("a tour", 5)})
	a := fm.apply(promptAvatar("av_1", "acct_1", fm.now)).(fsm.Avatar)
	if a.Status != fsm.AvatarPending || a.CreatedAt == 0 {
		t.Fatalf("new avatar %+v", a)
	}
	fm.apply(&fsm.CreateSpeech{SpeechID: "sp_1", AccountID: "acct_1", Text: "Hello there", VoiceID: "en-us", Now: fm.now})

	l := fm.lease(node)
	if l.TaskID != "sp_1/speech" {
		t.Fatalf("first lease %s, want the speech sample ahead of the video and the avatar", l.TaskID)
	}
	if sp, _ := fm.f.Speech("acct_1", "sp_1"); sp.Status != fsm.StatusProcessing {
		t.Fatalf("leased speech %+v", sp)
	}
	key := "videos/sp_1/speech/" + wire.ArtifactSpeech
	fm.apply(&fsm.CompleteTask{NodeID: node, TaskID: l.TaskID, Token: l.Token, Artifacts: map[string]string{wire.ArtifactSpeech: key}, DurationSeconds: 1.5, Now: fm.now})
	sp, ok := fm.f.Speech("acct_1", "sp_1")
	if !ok || sp.Status != fsm.StatusCompleted || sp.Audio != key || sp.DurationSeconds != 1.5 {
		t.Fatalf("completed speech %+v", sp)
	}
	if _, ok := fm.f.Speech("acct_2", "sp_1"); ok {
		t.Fatal("another account reads the speech sample")
	}

	l = fm.lease(node)
	for l.VideoID != "av_1" { // the video's plan may come first: same plan, older
		fm.complete(l, 1, "plan.json")
		l = fm.lease(node)
	}
	if a, _ := fm.f.Avatar("acct_1", "av_1"); a.Status != fsm.AvatarProcessing {
		t.Fatalf("leased avatar %+v", a)
	}
	fm.complete(l, 0, wire.ArtifactAvatar)
	a, ok = fm.f.Avatar("acct_1", "av_1")
	if !ok || a.Status != fsm.AvatarReady || a.Image != "videos/av_1/avatar/"+wire.ArtifactAvatar {
		t.Fatalf("ready avatar %+v", a)
	}
	if _, ok := fm.f.Task(l.TaskID); ok {
		t.Error("the finished avatar job is still in the scheduler")
	}
	if _, ok := fm.f.Avatar("acct_2", "av_1"); ok {
		t.Fatal("another account reads the avatar")
	}
}

func TestMediaJobWithoutItsFileFails(t *testing.T) {
	fm, node := newFarm(t, 0)
	fm.apply(promptAvatar("av_1", "acct_1", fm.now))
	fm.complete(fm.lease(node), 0)
	if a, _ := fm.f.Avatar("acct_1", "av_1"); a.Status != fsm.AvatarFailed || a.Error == "" {
		t.Fatalf("avatar completed without a picture: %+v", a)
	}
}

// A job that fails on three nodes fails with the last reason; the avatar
// stays failed however its task's leases end.
func TestMediaJobFailsOnThreeNodes(t *testing.T) {
	fm, _ := newFarm(t, 0)
	fm.apply(&fsm.CreateAvatar{Avatar: fsm.Avatar{ID: "av_1", AccountID: "acct_1", Kind: fsm.AvatarKindPhoto, FileURL: "https://example.com/me.jpg"}, Consent: true, Now: fm.now})
	fm.apply(&fsm.CreateSpeech{SpeechID: "sp_1", AccountID: "acct_1", Text: "hi", VoiceID: "xx", Now: fm.now})
	for i := 2; i <= 4; i++ {
		id := fmt.Sprintf("node_%d", i)
		fm.apply(&fsm.RegisterNode{NodeID: id, Name: id, CredHash: [32]byte{byte(i)}, Node: farmNode(), Now: fm.now})
		for range 2 {
			l := fm.lease(id)
			fm.apply(&fsm.FailTask{NodeID: id, TaskID: l.TaskID, Token: l.Token, Reason: "input image refused: 10.0.0.1 is private", Now: fm.now})
		}
	}
	a, _ := fm.f.Avatar("", "av_1")
	if a.Status != fsm.AvatarFailed || !strings.HasSuffix(a.Error, "last: input image refused: 10.0.0.1 is private") || a.ConsentAt == 0 {
		t.Fatalf("avatar after three failures: %+v", a)
	}
	if sp, _ := fm.f.Speech("", "sp_1"); sp.Status != fsm.StatusFailed || sp.Error == "" {
		t.Fatalf("speech after three failures: %+v", sp)
	}
	if res := fm.apply(&fsm.LeaseTask{NodeID: "node_2", LeaseMS: 30000, Now: fm.now}).(fsm.LeaseResult); res.Found {
		t.Fatalf("failed jobs still leased: %+v", res.Lease)
	}
}

func TestMediaSnapshotRoundTrip(t *testing.T) {
	fm, node := newFarm(t, 0)
	fm.apply(promptAvatar("av_1", "acct_1", fm.now))
	fm.apply(promptAvatar("av_2", "acct_1", fm.now))
	fm.apply(&fsm.CreateSpeech{SpeechID: "sp_1", AccountID: "acct_1", Text: "hi", VoiceID: "en", Now: fm.now})
	l := fm.lease(node) // the speech sample, processing
	fm.complete(fm.lease(node), 0, wire.ArtifactAvatar)

	b := snapshotBytes(t, fm.f)
	r := restored(t, b)
	if !bytes.Equal(snapshotBytes(t, r), b) {
		t.Fatal("restored state snapshots to other bytes")
	}
	for _, id := range []string{"av_1", "av_2"} {
		want, _ := fm.f.Avatar("acct_1", id)
		if got, _ := r.Avatar("acct_1", id); got != want {
			t.Errorf("%s restored as %+v, want %+v", id, got, want)
		}
	}
	if got := r.Avatars("acct_1"); len(got) != 2 || got[0].ID != "av_2" {
		t.Errorf("restored list %+v, want av_2 then av_1", got)
	}
	want, _ := fm.f.Speech("acct_1", "sp_1")
	if got, _ := r.Speech("acct_1", "sp_1"); got != want || got.Status != fsm.StatusProcessing {
		t.Errorf("speech restored as %+v, want %+v", got, want)
	}
	// The restored farm finishes the sample under the same lease.
	out, err := r.ApplyCommand(&fsm.CompleteTask{NodeID: node, TaskID: l.TaskID, Token: l.Token,
		Artifacts: map[string]string{wire.ArtifactSpeech: "videos/sp_1/speech/" + wire.ArtifactSpeech}, DurationSeconds: 1, Now: fm.now + int64(time.Second)})
	if err != nil || !out.(scheduler.Outcome).VideoCompleted {
		t.Fatalf("complete after restore: %v %+v", err, out)
	}
}

// A photo avatar may come from an uploaded asset: the account's own, ready
// image; while the avatar is being made the asset cannot be deleted.
func TestPhotoAvatarFromAsset(t *testing.T) {
	fm, _ := newFarm(t, 0)
	fm.apply(pendingAsset("as_pending", "acct_1", 3))
	fm.apply(pendingAsset("as_ready", "acct_1", 3))
	fm.apply(&fsm.CompleteAsset{AssetID: "as_ready", AccountID: "acct_1", StoredSize: 3, ContentType: "image/png", Now: fm.now})
	fromAsset := func(id, asset string) *fsm.CreateAvatar {
		return &fsm.CreateAvatar{Avatar: fsm.Avatar{ID: id, AccountID: "acct_1", Kind: fsm.AvatarKindPhoto, AssetID: asset}, Consent: true, Now: fm.now}
	}
	var unusable *fsm.AssetUnusableError
	if _, err := fm.f.ApplyCommand(fromAsset("av_a", "as_pending")); !errors.As(err, &unusable) {
		t.Fatalf("avatar from a pending asset: %v, want AssetUnusableError", err)
	}
	if _, err := fm.f.ApplyCommand(fromAsset("av_b", "as_nope")); !errors.Is(err, fsm.ErrAssetNotFound) {
		t.Fatalf("avatar from a missing asset: %v, want ErrAssetNotFound", err)
	}
	both := fromAsset("av_c", "as_ready")
	both.Avatar.FileURL = "https://example.com/me.png"
	if _, err := fm.f.ApplyCommand(both); !errors.Is(err, fsm.ErrInvalidCommand) {
		t.Fatalf("avatar with file_url and asset_id: %v, want ErrInvalidCommand", err)
	}
	fm.apply(fromAsset("av_d", "as_ready"))
	var inUse *fsm.InUseError
	if _, err := fm.f.ApplyCommand(&fsm.DeleteAsset{AssetID: "as_ready", AccountID: "acct_1"}); !errors.As(err, &inUse) || inUse.UsedBy[0] != "av_d" {
		t.Fatalf("deleting the asset of an avatar being made: %v, want InUseError naming av_d", err)
	}
}
