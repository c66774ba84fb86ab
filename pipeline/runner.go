package pipeline

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
)

// Operations a render request can ask for. The values are those of the
// models package's Operation constants.
const (
	TextToVideo    = "text_to_video"
	ImageToVideo   = "image_to_video"
	FirstLastFrame = "first_last_frame"
	MultipleImages = "multiple_images"
)

// DefaultFPS is the frame rate of a render that asks for none.
const DefaultFPS = 24

// MaxRenderSeconds is the longest clip a runner is asked for.
const MaxRenderSeconds = 300

// RenderRequest asks a Runner for one clip. Its JSON form is the request of
// the external runner protocol (see README.md).
type RenderRequest struct {
	Model           string   `json:"model"`
	Operation       string   `json:"operation"` // "" = text_to_video
	Prompt          string   `json:"prompt"`
	NegativePrompt  string   `json:"negative_prompt,omitempty"`
	Seed            int64    `json:"seed"`
	Style           string   `json:"style,omitempty"`
	Resolution      string   `json:"resolution"`   // e.g. "720p"; see FrameSize
	AspectRatio     string   `json:"aspect_ratio"` // e.g. "16:9"
	DurationSeconds float64  `json:"duration_seconds"`
	FPS             int      `json:"fps"`                    // 0 = DefaultFPS
	InputImages     []string `json:"input_images,omitempty"` // local paths; see Operation

	// Advanced model fields, passed through where a model supports them.
	GenerateAudio     bool     `json:"generate_audio,omitempty"`
	MovementAmplitude string   `json:"movement_amplitude,omitempty"` // auto, small, medium, large
	CFGScale          *float64 `json:"cfg_scale,omitempty"`
	CameraFixed       bool     `json:"camera_fixed,omitempty"`
	AutoFix           bool     `json:"auto_fix,omitempty"`

	// OutputPath is where the runner writes the MP4 clip.
	OutputPath string `json:"output_path"`

	// Intermediate marks a clip that a later stage decodes, scales to the
	// video's frame size and encodes again (an auto video's scene, which
	// the composite cuts together), so a runner may trade file size for
	// speed and may hand the clip over at the size it made it, smaller
	// than Resolution, in the same aspect ratio. The procedural runner then
	// encodes with x264 ultrafast at a low CRF (intermediateX264Args)
	// instead of the delivery settings, and leaves text_to_video frames at
	// the size it draws them (workingSize). Leave it false for a clip that
	// is delivered as it is (a manual render: finalize copies its stream).
	Intermediate bool `json:"intermediate,omitempty"`
}

// Runner renders one clip for a model: it writes an MP4 to req.OutputPath,
// reporting progress, and stops when ctx is cancelled.
type Runner interface {
	Render(ctx context.Context, req RenderRequest, progress ProgressFunc) error
}

// normalized returns req with defaults filled in, checked: the operation
// and its image count, the frame size, the duration and the output path.
func (req RenderRequest) normalized() (RenderRequest, int, int, error) {
	if req.Operation == "" {
		req.Operation = TextToVideo
	}
	if req.FPS == 0 {
		req.FPS = DefaultFPS
	}
	n := len(req.InputImages)
	switch req.Operation {
	case TextToVideo:
		if n != 0 {
			return req, 0, 0, invalidf("text_to_video takes no input images, got %d", n)
		}
	case ImageToVideo:
		if n != 1 {
			return req, 0, 0, invalidf("image_to_video takes 1 input image, got %d", n)
		}
	case FirstLastFrame:
		if n != 2 {
			return req, 0, 0, invalidf("first_last_frame takes 2 input images (first, last), got %d", n)
		}
	case MultipleImages:
		if n < 1 {
			return req, 0, 0, invalidf("multiple_images takes at least 1 input image")
		}
	default:
		return req, 0, 0, invalidf("operation %q: allowed are %s, %s, %s, %s", req.Operation, TextToVideo, ImageToVideo, FirstLastFrame, MultipleImages)
	}
	if req.DurationSeconds <= 0 || req.DurationSeconds > MaxRenderSeconds || math.IsNaN(req.DurationSeconds) {
		return req, 0, 0, invalidf("duration_seconds %v: allowed (0, %d]", req.DurationSeconds, MaxRenderSeconds)
	}
	if req.FPS < 1 || req.FPS > 120 {
		return req, 0, 0, invalidf("fps %d: allowed 1..120", req.FPS)
	}
	if req.OutputPath == "" {
		return req, 0, 0, invalidf("output_path is empty")
	}
	switch req.MovementAmplitude {
	case "", "auto", "small", "medium", "large":
	default:
		return req, 0, 0, invalidf("movement_amplitude %q: allowed auto, small, medium, large", req.MovementAmplitude)
	}
	w, h, err := FrameSize(req.Resolution, req.AspectRatio)
	if err != nil {
		return req, 0, 0, err
	}
	// Absolute paths never start with "-", so ffmpeg cannot read one as an option.
	images := make([]string, n)
	for i, p := range req.InputImages {
		if images[i], err = filepath.Abs(p); err != nil {
			return req, 0, 0, invalidf("input image %q: %v", p, err)
		}
	}
	req.InputImages = images
	if req.OutputPath, err = filepath.Abs(req.OutputPath); err != nil {
		return req, 0, 0, invalidf("output_path %q: %v", req.OutputPath, err)
	}
	return req, w, h, nil
}

// Router sends each request to the runner configured for its model, and
// every other model to Default (usually a *ProceduralRunner).
type Router struct {
	Default Runner
	Models  map[string]Runner // model id → runner, e.g. an *ExternalRunner
}

var _ Runner = (*Router)(nil)

// Render implements Runner.
func (r *Router) Render(ctx context.Context, req RenderRequest, progress ProgressFunc) error {
	if run, ok := r.Models[req.Model]; ok {
		return run.Render(ctx, req, progress)
	}
	if r.Default == nil {
		return fmt.Errorf("%w: no runner for model %q", ErrInvalidRequest, req.Model)
	}
	return r.Default.Render(ctx, req, progress)
}
