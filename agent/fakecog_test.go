package agent

import (
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/vidfarm/vidfarm/internal/fakes"
)

// newAgentFakeCog starts a fake Cog container (internal/fakes) in the given
// health whose predictions log 50% progress, wait for its Gate, then return a real 1280x720
// clip of 4 s (what the tests' renders ask for) as a data URI.
func newAgentFakeCog(t testing.TB, health string) *fakes.Cog {
	clip := testClip(t, 1280, 720, 4)
	return fakes.NewCog(t, func(c *fakes.Cog) {
		c.Health, c.Clip, c.Gate, c.InputNames = health, clip, make(chan struct{}), []string{"prompt"}
		c.Logs = []string{" 50%|█████     | 10/20 [00:05<00:05]\r"}
		c.Output = func(string) any { return "data:video/mp4;base64," + base64.StdEncoding.EncodeToString(c.Clip) }
	})
}

// testClip is an H.264 MP4 of w x h pixels and the given seconds.
func testClip(t testing.TB, w, h int, seconds float64) []byte {
	t.Helper()
	requireTools(t, "ffmpeg", "ffprobe")
	path := filepath.Join(t.TempDir(), "clip.mp4")
	out, err := exec.Command("ffmpeg", "-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i",
		fmt.Sprintf("testsrc2=s=%dx%d:r=24:d=%g", w, h, seconds), "-c:v", "libx264", "-preset", "ultrafast",
		"-pix_fmt", "yuv420p", path).CombinedOutput()
	if err != nil {
		t.Fatalf("ffmpeg: %v: %s", err, out)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
