package pipeline

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestProbeMP4MatchesFFprobe: the in-process reader agrees with ffprobe on
// what CheckClip uses, for the containers and codecs runners return, and
// leaves to ffprobe what it does not know.
func TestProbeMP4MatchesFFprobe(t *testing.T) {
	requireTools(t, "ffmpeg", "ffprobe")
	dir := t.TempDir()
	tests := []struct {
		name string
		args []string // ffmpeg output options
		ok   bool     // the reader knows it
	}{
		{"h264.mp4", []string{"-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p"}, true},
		{"h264-sound.mp4", []string{"-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac", "-shortest"}, true},
		{"faststart.mp4", []string{"-c:v", "libx264", "-preset", "ultrafast", "-movflags", "+faststart"}, true},
		{"hevc.mp4", []string{"-c:v", "libx265", "-preset", "ultrafast", "-tag:v", "hvc1", "-x265-params", "log-level=error"}, true},
		{"mpeg4.mov", []string{"-c:v", "mpeg4"}, true},
		{"fragmented.mp4", []string{"-c:v", "libx264", "-preset", "ultrafast", "-movflags", "frag_keyframe+empty_moov"}, false},
		{"vp9.webm", []string{"-c:v", "libvpx-vp9", "-deadline", "realtime"}, false},
	}
	for _, tc := range tests {
		path := filepath.Join(dir, tc.name)
		args := append([]string{"-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=s=320x176:r=24:d=2.5",
			"-f", "lavfi", "-i", "sine=d=2.5", "-map", "0:v"}, tc.args...)
		if tc.name == "h264-sound.mp4" {
			args = append(args, "-map", "1:a")
		}
		if out, err := exec.Command("ffmpeg", append(args, path)...).CombinedOutput(); err != nil {
			t.Fatalf("%s: ffmpeg: %v\n%s", tc.name, err, out)
		}
		got, err := probeMP4(path)
		if (err == nil) != tc.ok {
			t.Errorf("%s: probeMP4 error %v, want known %v", tc.name, err, tc.ok)
			continue
		}
		if !tc.ok {
			continue
		}
		want := probe(t, path)
		if got.VideoCodec != want.VideoCodec || got.Width != want.Width || got.Height != want.Height || got.HasAudio != want.HasAudio ||
			!near(got.Duration, want.Duration, 50*time.Millisecond) {
			t.Errorf("%s: probeMP4 = %+v, ffprobe = %+v", tc.name, got, want)
		}
	}
	garbage := filepath.Join(dir, "garbage.mp4")
	if err := os.WriteFile(garbage, []byte("\x00\x00\x00\x18ftypisom\x00\x00\x02\x00isomiso2\x00\x00\x10\x00moov"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := probeMP4(garbage); err == nil {
		t.Error("probeMP4 read a cut moov box")
	}
}
