package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// MediaInfo is what ffprobe reports about a media file.
type MediaInfo struct {
	Duration   time.Duration // container duration
	Width      int           // first video stream; 0 if none
	Height     int
	VideoCodec string // e.g. "h264"; "" if no video
	PixFmt     string // e.g. "yuv420p"
	HasAudio   bool
	AudioCodec string // e.g. "aac"; "" if no audio
}

// Probe reads a media file's duration, frame size and streams with ffprobe
// using the default Tools.
func Probe(ctx context.Context, path string) (MediaInfo, error) {
	return (&Tools{}).Probe(ctx, path)
}

// ProbeArgs are the ffprobe arguments Probe uses for path.
func ProbeArgs(path string) []string {
	return []string{"-v", "error", "-print_format", "json", "-show_format", "-show_streams", path}
}

// Probe reads a media file's duration, frame size and streams with ffprobe.
func (t *Tools) Probe(ctx context.Context, path string) (MediaInfo, error) {
	out, err := t.exec().Run(ctx, Command{Name: t.ffprobeBin(), Args: ProbeArgs(path)})
	if err != nil {
		return MediaInfo{}, fmt.Errorf("probe %s: %w", path, err)
	}
	return parseProbe(out)
}

func parseProbe(out []byte) (MediaInfo, error) {
	var doc struct {
		Format struct {
			Duration string `json:"duration"`
		} `json:"format"`
		Streams []struct {
			CodecType string `json:"codec_type"`
			CodecName string `json:"codec_name"`
			Width     int    `json:"width"`
			Height    int    `json:"height"`
			PixFmt    string `json:"pix_fmt"`
			Duration  string `json:"duration"`
		} `json:"streams"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		return MediaInfo{}, fmt.Errorf("probe: decode ffprobe output: %w", err)
	}
	var info MediaInfo
	info.Duration = parseSeconds(doc.Format.Duration)
	for _, s := range doc.Streams {
		switch s.CodecType {
		case "video":
			if info.VideoCodec == "" {
				info.VideoCodec, info.Width, info.Height, info.PixFmt = s.CodecName, s.Width, s.Height, s.PixFmt
			}
		case "audio":
			if !info.HasAudio {
				info.HasAudio, info.AudioCodec = true, s.CodecName
			}
		}
		if info.Duration == 0 {
			info.Duration = parseSeconds(s.Duration)
		}
	}
	return info, nil
}

// parseSeconds parses ffprobe's "12.345000"; "" or "N/A" give 0.
func parseSeconds(s string) time.Duration {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 {
		return 0
	}
	return time.Duration(f * float64(time.Second))
}
