package pipeline

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// The avatar stage: a lip-synced presenter made by a model server (a Cog
// container or a ComfyUI workflow, runner stage "avatar") from the
// presenter's picture and the narration, composited in place of the still
// picture (CompositeInput.AvatarClip). The model hears one track of the
// whole video, so that its lips move when the narration is heard in the
// finished video.

// NarrationTrack writes the narration of a composite as one mono WAV of
// the plan's length, every line at the time Composite places it
// (PlaceLines) and silence between: the audio an avatar model lip-syncs
// to.
func (t *Tools) NarrationTrack(ctx context.Context, plan Plan, lines []SpokenLine, outWAV string) error {
	total := time.Duration(plan.DurationSeconds) * time.Second
	if total <= 0 {
		return invalidf("narration track: plan has no duration")
	}
	placed := PlaceLines(plan, lines)
	for i := range placed {
		a, err := filepath.Abs(placed[i].Audio)
		if err != nil {
			return fmt.Errorf("narration track: %w", err)
		}
		placed[i].Audio = a
	}
	var args []string
	input := 0
	addInput := func(a ...string) int {
		args = append(args, a...)
		input++
		return input - 1
	}
	mix := narrationMix(placed, secs(total), addInput)
	args = append(args, "-filter_complex", strings.Join(mix, ";"), "-map", "[a]", "-c:a", "pcm_s16le", "-map_metadata", "-1", outWAV)
	if err := t.ffmpeg(ctx, "", args, total, nil); err != nil {
		return fmt.Errorf("narration track: %w", err)
	}
	return checkOutput(outWAV)
}

// CheckPresenter probes the avatar stage's clip: it must be a video that
// ffprobe reads. Its length need not match (Composite holds the last
// frame of a short clip and cuts a long one), nor its shape (it is cropped
// square).
func (t *Tools) CheckPresenter(ctx context.Context, clip string) (MediaInfo, error) {
	info, err := t.probeClip(ctx, clip)
	if err != nil {
		return info, fmt.Errorf("%w: the avatar runner's clip cannot be read: %w", ErrRunnerFailed, err)
	}
	if info.VideoCodec == "" || info.Width == 0 || info.Height == 0 {
		return info, fmt.Errorf("%w: the avatar runner's clip has no video stream (check its output: it should be the lip-synced presenter)", ErrRunnerFailed)
	}
	return info, nil
}
