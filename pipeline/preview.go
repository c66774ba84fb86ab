package pipeline

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// PreviewResolution is the size of preview stills: 480x270 landscape,
// 270x480 portrait. The API shows them blurred.
const PreviewResolution = "270p"

// PreviewStill draws the low-resolution still of a free-account preview: one
// frame of what the procedural runner would render for prompt, in the
// orientation ("landscape", "portrait" or "" for landscape), as PNG (or
// JPEG when outPNG does not end in .png).
func (t *Tools) PreviewStill(ctx context.Context, prompt, orientation, outPNG string) error {
	if strings.TrimSpace(prompt) == "" {
		return invalidf("preview prompt is empty")
	}
	aspect, err := OrientationAspect(orientation)
	if err != nil {
		return err
	}
	w, h, err := FrameSize(PreviewResolution, aspect)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(outPNG), 0o755); err != nil {
		return fmt.Errorf("preview still: %w", err)
	}
	if err := t.ffmpeg(ctx, "", previewArgs(prompt, w, h, outPNG), 0, nil); err != nil {
		return fmt.Errorf("preview still: %w", err)
	}
	return checkOutput(outPNG)
}

// previewArgs renders the first frame of the text_to_video look of prompt.
func previewArgs(prompt string, w, h int, out string) []string {
	l := newLook(RenderRequest{Operation: TextToVideo, Prompt: prompt})
	graph := textGraph(l, w, h, 1, 1) + ";" + tailChain(l, w, h)
	return append([]string{"-filter_complex", graph, "-map", "[v]"}, stillArgs(out)...)
}
