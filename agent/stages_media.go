package agent

import (
	"context"
	"fmt"

	"github.com/vidfarm/vidfarm/pipeline"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

// Media jobs: one task each, under the job's own id (Assignment.Video.ID).

// avatar makes an account avatar's picture: drawn from its prompt, or its
// photo fetched (under the same address rules as manual input images,
// checked again at connect time) and normalised by ffmpeg.
func (j *job) avatar(ctx context.Context) error {
	spec := j.asg.Avatar
	if spec == nil {
		return fmt.Errorf("%w: an avatar task without its avatar", errBadAssignment)
	}
	out := j.path("out", wire.ArtifactAvatar)
	switch spec.Kind {
	case "prompt":
		if err := pipeline.WritePromptAvatar(spec.Prompt, spec.Gender, out); err != nil {
			return fmt.Errorf("avatar: %w", err)
		}
	case "photo":
		photo, err := j.avatarPhoto(ctx, spec)
		if err != nil {
			return fmt.Errorf("avatar photo: %w", err)
		}
		j.t.setPercent(50)
		if err := j.a.cfg.Tools.NormalizeAvatarPhoto(ctx, photo, out); err != nil {
			return err
		}
	default:
		return fmt.Errorf("%w: avatar kind %q", errBadAssignment, spec.Kind)
	}
	j.t.setPercent(90)
	return j.upload(ctx, out, wire.ArtifactAvatar)
}

// avatarPhoto gets the photo of a photo avatar: the uploaded asset from the
// blob store, or the picture at its file_url under the input address rules.
func (j *job) avatarPhoto(ctx context.Context, spec *wire.AvatarJob) (string, error) {
	if spec.PhotoInput != "" {
		return j.imageInput(ctx, spec.PhotoInput)
	}
	return j.a.inputs.fetch(ctx, spec.FileURL, j.path("photo"))
}

// speech speaks a speech sample into AAC audio and reports its length.
func (j *job) speech(ctx context.Context) error {
	spec := j.asg.Speech
	if spec == nil {
		return fmt.Errorf("%w: a speech task without its text", errBadAssignment)
	}
	out := j.path("out", wire.ArtifactSpeech)
	d, err := j.a.cfg.Tools.SpeakWith(ctx, j.a.speaker, spec.Text, spec.VoiceID, out)
	if err != nil {
		return fmt.Errorf("speech: %w", err)
	}
	j.t.setPercent(90)
	j.res.DurationSeconds = d.Seconds()
	return j.upload(ctx, out, wire.ArtifactSpeech)
}

// presenter returns what presents an auto video: the picture of the
// account's own avatar when the assignment carries one, else a stock
// avatar id ("" image).
func (j *job) presenter(ctx context.Context) (stockID, image string, err error) {
	if _, own := j.asg.Inputs[wire.InputAvatar]; own {
		image, err = j.input(ctx, wire.InputAvatar)
		return "", image, err
	}
	id := j.v.AvatarID
	if id == "" {
		id = pipeline.DefaultAvatar
	}
	if !isStockAvatar(id) {
		// The control plane only accepts stock avatars and the account's
		// ready ones, whose picture comes as an input: this is an older
		// control plane or a bug, and the video is still worth delivering.
		j.t.log.Warn("avatar is neither a stock avatar nor sent as an input: using the default presenter",
			"avatar_id", id, "default", pipeline.DefaultAvatar)
		id = pipeline.DefaultAvatar
	}
	return id, "", nil
}

func isStockAvatar(id string) bool {
	for _, s := range pipeline.StockAvatars() {
		if s.ID == id {
			return true
		}
	}
	return false
}
