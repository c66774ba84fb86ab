package pipeline

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
)

// ErrToolUnfit means an external program is installed but lacks what the
// stages use: an FFmpeg too old for a filter (gradients came in 4.4) or built
// without libx264. Such a node renders nothing but failures, each retried, so
// the agent does not advertise the tool (see CheckFFmpeg).
var ErrToolUnfit = errors.New("pipeline: tool lacks features the pipeline uses")

// ffmpegFilters are the filters the stages' filter graphs use.
// TestFFmpegFiltersListed keeps the list in step with the code.
var ffmpegFilters = []string{
	"adelay", "aevalsrc", "aformat", "amix", "anullsrc", "apad", "aresample", "atrim", "color",
	"concat", "crop", "drawbox", "drawgrid", "edgedetect", "eq", "format", "fps", "gblur", "geq",
	"gradients", "hue", "loop", "lutrgb", "noise", "overlay", "pad", "scale", "setpts", "setsar", "split", "subtitles", "tpad", "trim", "unsharp", "vignette", "xfade", "zoompan",
}

// ffmpegEncoders are the encoders the stages name with -c:v and -c:a.
var ffmpegEncoders = []string{"aac", "libx264", "mjpeg", "pcm_s16le"}

// CheckFFmpeg asks the ffmpeg the stages would run which filters and
// encoders it has, and returns an error wrapping ErrToolUnfit naming those it
// lacks and its version, or ErrToolMissing when it is not installed. Discovery
// runs it once at the agent's start: a distribution's FFmpeg 4.2 otherwise
// looks installed and fails every render at its first filter graph.
func (t *Tools) CheckFFmpeg(ctx context.Context) error {
	run := func(arg string) ([]byte, error) {
		return t.exec().Run(ctx, Command{Name: t.ffmpegBin(), Args: []string{"-hide_banner", arg}})
	}
	filters, err := run("-filters")
	if err != nil {
		return fmt.Errorf("ffmpeg -filters: %w", err)
	}
	encoders, err := run("-encoders")
	if err != nil {
		return fmt.Errorf("ffmpeg -encoders: %w", err)
	}
	var missing []string
	if m := absent(ffmpegFilters, filterNames(filters)); len(m) > 0 {
		missing = append(missing, "filters "+strings.Join(m, ", "))
	}
	if m := absent(ffmpegEncoders, encoderNames(encoders)); len(m) > 0 {
		missing = append(missing, "encoders "+strings.Join(m, ", "))
	}
	if len(missing) == 0 {
		return nil
	}
	version := "version unknown"
	if out, err := run("-version"); err == nil {
		// "ffmpeg version 5.1.6-0+deb12u1 Copyright (c) ..."
		if f := strings.Fields(string(out)); len(f) >= 3 && f[1] == "version" {
			version = "version " + f[2]
		}
	}
	return fmt.Errorf("%w: %s (%s) lacks %s: install FFmpeg 4.4 or newer built with libx264 and libass (Debian 12 and Ubuntu 22.04 packages are)",
		ErrToolUnfit, t.ffmpegBin(), version, strings.Join(missing, "; "))
}

// absent returns the names in want that have is missing, in want's order.
func absent(want []string, have map[string]bool) []string {
	var out []string
	for _, n := range want {
		if !have[n] {
			out = append(out, n)
		}
	}
	return out
}

// filterNames reads "ffmpeg -filters": after a legend, one filter a line as
// flags, name, "inputs->outputs" and a description.
func filterNames(out []byte) map[string]bool {
	names := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 3 && strings.Contains(f[2], "->") {
			names[f[1]] = true
		}
	}
	return names
}

// encoderNames reads "ffmpeg -encoders": a legend, a line of dashes, then one
// encoder a line as flags, name and a description.
func encoderNames(out []byte) map[string]bool {
	names := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	listed := false
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 1 && strings.Trim(f[0], "-") == "" && f[0] != "":
			listed = true
		case listed && len(f) >= 2:
			names[f[1]] = true
		}
	}
	return names
}
