package fsm

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/vidfarm/vidfarm/scheduler"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

// Media jobs: an account's avatars and its speech samples. Each is one
// render-farm task (a scheduler job under the avatar's or sample's own id);
// its record here says where it stands and, once done, where its file is.

// Avatar kinds and statuses.
const (
	AvatarKindPrompt = "prompt"
	AvatarKindPhoto  = "photo"

	AvatarPending    = "pending"    // waiting for a render node
	AvatarProcessing = "processing" // a node is making it
	AvatarReady      = "ready"      // usable as an auto video's avatar_id
	AvatarFailed     = "failed"     // Error says why
)

// speechPriority puts speech samples ahead of every plan's videos: a client
// is usually waiting on the request, and a sample is a second of CPU. The
// media rate limit (5 a minute per account) bounds what this can take.
const speechPriority = 2

// Avatar is an account's own presenter, made from a prompt or a photo.
type Avatar struct {
	ID        string `msgpack:"id"`
	AccountID string `msgpack:"account"`
	Kind      string `msgpack:"kind"`
	Name      string `msgpack:"name"`
	Gender    string `msgpack:"gender,omitempty"` // "female", "male" or "" (not given)
	Prompt    string `msgpack:"prompt,omitempty"`
	FileURL   string `msgpack:"file_url,omitempty"`
	// AssetID is the account's ready image asset the photo comes from, when
	// the photo was uploaded as an asset instead of given by file_url.
	AssetID string `msgpack:"asset,omitempty"`
	// ConsentAt is when the account confirmed it may use the person's
	// likeness (photo avatars): the request's commit time.
	ConsentAt int64  `msgpack:"consent_at,omitempty"`
	Status    string `msgpack:"status"`
	Error     string `msgpack:"error,omitempty"`
	// Image is the blob key of the finished picture.
	Image     string `msgpack:"image,omitempty"`
	CreatedAt int64  `msgpack:"created_at"`
	UpdatedAt int64  `msgpack:"updated_at"`
}

// Speech is one speech sample (POST /v1/voices/speech). Statuses are the
// video ones: queued, processing, completed, failed.
type Speech struct {
	ID        string `msgpack:"id"`
	AccountID string `msgpack:"account"`
	Text      string `msgpack:"text"`
	VoiceID   string `msgpack:"voice"`
	Status    string `msgpack:"status"`
	Error     string `msgpack:"error,omitempty"`
	// Audio is the blob key of the finished audio.
	Audio           string  `msgpack:"audio,omitempty"`
	DurationSeconds float64 `msgpack:"duration,omitempty"`
	CreatedAt       int64   `msgpack:"created_at"`
	UpdatedAt       int64   `msgpack:"updated_at"`
}

// CreateAvatar records an avatar and queues the task that makes it.
type CreateAvatar struct {
	Avatar Avatar `msgpack:"avatar"` // ID, AccountID, Kind, Name, Gender, Prompt or FileURL
	// Consent is the client's consent: true, or a photo avatar is refused.
	Consent bool  `msgpack:"consent"`
	Now     int64 `msgpack:"now"`
}

// CreateSpeech records a speech sample and queues the task that speaks it.
type CreateSpeech struct {
	SpeechID  string `msgpack:"speech"`
	AccountID string `msgpack:"account"`
	Text      string `msgpack:"text"`
	VoiceID   string `msgpack:"voice"`
	Now       int64  `msgpack:"now"`
}

func (CreateAvatar) Type() MessageType { return CreateAvatarType }
func (CreateSpeech) Type() MessageType { return CreateSpeechType }

func (s *state) applyCreateAvatar(c *CreateAvatar) (Avatar, error) {
	a := c.Avatar
	acct, ok := s.accounts[a.AccountID]
	switch {
	case !ok:
		return Avatar{}, fmt.Errorf("create avatar: %w", ErrAccountNotFound)
	case a.ID == "" || s.avatars[a.ID] != nil:
		return Avatar{}, fmt.Errorf("%w: avatar id %q is empty or taken", ErrInvalidCommand, a.ID)
	case a.Kind == AvatarKindPrompt && a.Prompt == "":
		return Avatar{}, fmt.Errorf("%w: a prompt avatar needs a prompt", ErrInvalidCommand)
	case a.Kind == AvatarKindPhoto && ((a.FileURL == "") == (a.AssetID == "") || !c.Consent):
		return Avatar{}, fmt.Errorf("%w: a photo avatar needs consent and either a file_url or an asset_id", ErrInvalidCommand)
	case a.Kind != AvatarKindPrompt && a.Kind != AvatarKindPhoto:
		return Avatar{}, fmt.Errorf("%w: avatar kind %q", ErrInvalidCommand, a.Kind)
	}
	if a.AssetID != "" {
		if err := s.checkPhotoAsset(a.AccountID, a.AssetID); err != nil {
			return Avatar{}, err
		}
	}
	g := scheduler.AvatarGraph(scheduler.VideoInfo{ID: a.ID, AccountID: a.AccountID, Priority: priority(acct.Plan)})
	if err := s.sched.Submit(g, timeOf(c.Now)); err != nil {
		return Avatar{}, fmt.Errorf("submit avatar %s: %w", a.ID, err)
	}
	if a.Kind == AvatarKindPhoto {
		a.ConsentAt = c.Now
	}
	a.Status, a.Error, a.Image = AvatarPending, "", ""
	a.CreatedAt, a.UpdatedAt = c.Now, c.Now
	s.avatars[a.ID] = &a
	s.accountAvatars[a.AccountID] = append(s.accountAvatars[a.AccountID], a.ID)
	return a, nil
}

func (s *state) applyCreateSpeech(c *CreateSpeech) (Speech, error) {
	switch {
	case s.accounts[c.AccountID] == nil:
		return Speech{}, fmt.Errorf("create speech: %w", ErrAccountNotFound)
	case c.SpeechID == "" || s.speech[c.SpeechID] != nil:
		return Speech{}, fmt.Errorf("%w: speech id %q is empty or taken", ErrInvalidCommand, c.SpeechID)
	case c.Text == "":
		return Speech{}, fmt.Errorf("%w: speech text is empty", ErrInvalidCommand)
	}
	g := scheduler.SpeechGraph(scheduler.VideoInfo{ID: c.SpeechID, AccountID: c.AccountID, Priority: speechPriority})
	g.Tasks[0].Req = s.voiceReq(g.Tasks[0].Req, c.VoiceID, "ffmpeg")
	if err := s.sched.Submit(g, timeOf(c.Now)); err != nil {
		return Speech{}, fmt.Errorf("submit speech %s: %w", c.SpeechID, err)
	}
	sp := &Speech{ID: c.SpeechID, AccountID: c.AccountID, Text: c.Text, VoiceID: c.VoiceID,
		Status: StatusQueued, CreatedAt: c.Now, UpdatedAt: c.Now}
	s.speech[sp.ID] = sp
	s.accountSpeech[sp.AccountID] = append(s.accountSpeech[sp.AccountID], sp.ID)
	return *sp, nil
}

// jobLeased moves a media job to processing when its task is first leased.
func (s *state) jobLeased(id string, now int64) {
	if a := s.avatars[id]; a != nil && a.Status == AvatarPending {
		a.Status, a.UpdatedAt = AvatarProcessing, now
	}
	if sp := s.speech[id]; sp != nil && sp.Status == StatusQueued {
		sp.Status, sp.UpdatedAt = StatusProcessing, now
	}
}

// jobCompleted finishes the media job whose task completed with artifacts
// (file name -> blob key). It reports whether id is a media job.
func (s *state) jobCompleted(id string, artifacts map[string]string, seconds float64, now int64) bool {
	if a := s.avatars[id]; a != nil {
		if key := artifacts[wire.ArtifactAvatar]; key != "" {
			a.Status, a.Image = AvatarReady, key
		} else {
			a.Status, a.Error = AvatarFailed, "the render node reported no "+wire.ArtifactAvatar
		}
		a.UpdatedAt = now
		_ = s.sched.Forget(id)
		return true
	}
	if sp := s.speech[id]; sp != nil {
		if key := artifacts[wire.ArtifactSpeech]; key != "" && seconds > 0 && !math.IsInf(seconds, 0) {
			sp.Status, sp.Audio, sp.DurationSeconds = StatusCompleted, key, seconds
		} else {
			sp.Status, sp.Error = StatusFailed, "the render node reported no audio"
		}
		sp.UpdatedAt = now
		_ = s.sched.Forget(id)
		return true
	}
	return false
}

// jobFailed fails the media job id (its task failed on too many nodes); it
// reports whether id is a media job.
func (s *state) jobFailed(id, reason string, now int64) bool {
	if a := s.avatars[id]; a != nil {
		if a.Status == AvatarPending || a.Status == AvatarProcessing {
			a.Status, a.Error, a.UpdatedAt = AvatarFailed, reason, now
		}
		_ = s.sched.Forget(id)
		return true
	}
	if sp := s.speech[id]; sp != nil {
		if sp.Status == StatusQueued || sp.Status == StatusProcessing {
			sp.Status, sp.Error, sp.UpdatedAt = StatusFailed, reason, now
		}
		_ = s.sched.Forget(id)
		return true
	}
	return false
}

// Avatar returns the avatar with that id if it belongs to accountID (any
// account when accountID is "").
func (f *FSM) Avatar(accountID, id string) (Avatar, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	a, ok := f.s.avatars[id]
	if !ok || (accountID != "" && a.AccountID != accountID) {
		return Avatar{}, false
	}
	return *a, true
}

// Avatars returns the account's avatars, newest first.
func (f *FSM) Avatars(accountID string) []Avatar {
	f.mu.RLock()
	defer f.mu.RUnlock()
	ids := f.s.accountAvatars[accountID]
	out := make([]Avatar, 0, len(ids))
	for _, id := range slices.Backward(ids) {
		out = append(out, *f.s.avatars[id])
	}
	return out
}

// Speech returns the speech sample with that id if it belongs to accountID
// (any account when accountID is "").
func (f *FSM) Speech(accountID, id string) (Speech, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	sp, ok := f.s.speech[id]
	if !ok || (accountID != "" && sp.AccountID != accountID) {
		return Speech{}, false
	}
	return *sp, true
}

// checkPhotoAsset refuses an avatar photo asset that is not the account's own,
// ready image.
func (s *state) checkPhotoAsset(accountID, id string) error {
	as, err := s.asset(accountID, id)
	if err != nil {
		return err
	}
	if as.Status != AssetReady {
		return &AssetUnusableError{AssetID: id, Reason: "its upload is not complete: PUT the bytes and POST /v1/assets/" + id + "/complete first"}
	}
	if !strings.HasPrefix(as.ContentType, "image/") {
		return &AssetUnusableError{AssetID: id, Reason: "it is " + as.ContentType + ", not an image"}
	}
	return nil
}

// photoAvatarsUsing lists the account's avatars still being made from the
// asset: deleting it would leave their task without its photo.
func (s *state) photoAvatarsUsing(accountID, assetID string) []string {
	var out []string
	for _, av := range s.avatars {
		if av.AccountID == accountID && av.AssetID == assetID && (av.Status == AvatarPending || av.Status == AvatarProcessing) {
			out = append(out, av.ID)
		}
	}
	slices.Sort(out) // map order must not reach the answer
	return out
}
