package main

import (
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/ids"
	"github.com/vidfarm/vidfarm/internal/fakes"
)

// startCogServer starts a fake Cog container (internal/fakes) with the
// Input schema of a text-to-video model that renders with ffmpeg
// (testsrc2) at the asked width x height for num_frames at 24 fps, and
// answers with the clip as a data URI.
func startCogServer(t *testing.T, dir string) *fakes.Cog {
	return fakes.NewCog(t, func(c *fakes.Cog) {
		c.InputNames = []string{"prompt", "seed", "width", "height", "num_frames"}
		c.Logs = []string{" 50%|█████     | 25/50 [00:02<00:02]\r"}
		c.Render = func(in map[string]any) (any, error) {
			num := func(k string) int { f, _ := in[k].(float64); return int(f) }
			out := filepath.Join(dir, fmt.Sprintf("cog-%s.mp4", ids.New("clip")))
			src := fmt.Sprintf("testsrc2=s=%dx%d:r=24:d=%g", num("width"), num("height"), float64(num("num_frames"))/24)
			if msg, err := exec.Command("ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", src,
				"-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", out).CombinedOutput(); err != nil {
				return nil, fmt.Errorf("ffmpeg: %v: %s", err, msg)
			}
			clip, err := os.ReadFile(out)
			if err != nil {
				return nil, err
			}
			return "data:video/mp4;base64," + base64.StdEncoding.EncodeToString(clip), nil
		}
	})
}

// TestE2ECogRunner: an agent with a runners file renders a manual video
// through a Cog container; when the container's health check fails the
// node withdraws the model without registering again (a new video waits
// with no_node_supports_model) and when it recovers the model comes back
// and the video completes.
func TestE2ECogRunner(t *testing.T) {
	f := newE2EFarm(t, 100)
	cog := startCogServer(t, f.dir)
	runners := filepath.Join(f.dir, "runners.yaml")
	file := fmt.Sprintf(`version: 1
runners:
  - name: seedance
    kind: cog
    url: %s
    models: [%s]
    health_interval: 200ms
    inputs: {prompt: prompt, seed: seed, width: width, height: height, num_frames: num_frames}
`, cog.URL(), e2eModel)
	if err := os.WriteFile(runners, []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	ag := f.startAgent("agent-cog", "--runners", runners)

	v := f.createVideo(manualBody("a lighthouse in the rain", ""))
	v = f.waitStatus(v["id"].(string), "completed", 90*time.Second)
	fw, fh := frameSize(t, e2eResolution, e2eAspect)
	checkMP4(t, f.download(v["video_url"].(string), "cog.mp4"), 5, fw, fh, false)
	got := cog.Inputs()
	if len(got) != 1 || got[0]["prompt"] != "a lighthouse in the rain" || got[0]["width"] != float64(fw) ||
		got[0]["height"] != float64(fh) || got[0]["num_frames"] != float64(5*24) {
		t.Fatalf("the container got %v", got)
	}

	cog.SetHealth("SETUP_FAILED")
	eventually(t, 30*time.Second, "the agent to withdraw the model", func() bool {
		return len(findLogs(ag.proc, "advertised capacity updated in place")) >= 1
	})
	if n := len(findLogs(ag.proc, "registered")); n != 1 {
		t.Errorf("the agent registered %d times; a runner's change should update its models in place", n)
	}
	v = f.createVideo(manualBody("a second lighthouse", ""))
	id := v["id"].(string)
	f.waitVideo(id, 30*time.Second, "waiting for a node with the model", func(v map[string]any) bool {
		p, _ := v["progress"].(map[string]any)
		return p["reason"] == "no_node_supports_model"
	})
	cog.SetHealth("READY")
	f.waitStatus(id, "completed", 90*time.Second)
	if n := len(cog.Inputs()); n != 2 {
		t.Errorf("the container got %d predictions, want 2", n)
	}
}

// TestAgentRunnersFileMistakes: `vidfarm agent --runners` with a broken
// file exits 1 before it registers, listing every mistake with its line.
func TestAgentRunnersFileMistakes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	file := filepath.Join(t.TempDir(), "runners.yaml")
	if err := os.WriteFile(file, []byte(`version: 1
runners:
  - name: wan
    kind: cog
    url: http://127.0.0.1:5000
    models: [wan-2.2-a14b, wan-9]
    gpu_memory_gb: 0
    inputs: {prompt: prompt, strength: s}
  - name: wan
    kind: cog
    url: http://127.0.0.1:5001
    models: [wan-2.2-a14b]
    timeout: forever
    inputs: {prompt: prompt}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(vidfarmBinary(t), "agent", "--server", "http://127.0.0.1:1", "--token", "t", "--runners", file, "--work-dir", t.TempDir())
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("vidfarm agent: %v, want exit status 1; output:\n%s", err, out)
	}
	for _, want := range []string{
		"runners file runners.yaml has 6 mistake(s):",
		`runners.yaml:6: runners[0].models[1]: "wan-9" is not a catalog model`,
		"runners.yaml:7: runners[0].gpu_memory_gb: must be > 0",
		"runners.yaml:8: runners[0].inputs.strength: not a request field",
		`runners.yaml:13: runners[1].timeout: "forever" is not a duration`,
		`runners.yaml:9: runners[1].name: "wan" is also the name of the runner at runners.yaml:3`,
		`runners.yaml:9: runners[1].models: model "wan-2.2-a14b" is also given to the runner at runners.yaml:3`,
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestE2ECogAvatar: an agent whose runners file has a lip-sync model in a
// Cog container (stage avatar, as deploy/gpu-node's SadTalker) presents an
// auto video with a clip the container makes from the presenter's picture
// and the narration, sent as data URIs under the mapped input names.
func TestE2ECogAvatar(t *testing.T) {
	f := newE2EFarm(t, 100)
	f.waitRouting()
	clip := e2eClip(t, f.dir, 6)
	cog := fakes.NewCog(t, func(c *fakes.Cog) {
		c.InputNames = []string{"source_image", "driven_audio"}
		c.Clip = clip
	})
	runners := f.runnersFile(`  - {name: sadtalker, kind: cog, url: %s, stages: [avatar], health_interval: 200ms,
     inputs: {portrait: source_image, audio: driven_audio}}
`, cog.URL())
	f.startAgent("agent-avatar", "--runners", runners)

	v := f.createVideo(`{"mode":"auto","prompt":"A baker opens her shop before dawn.","duration_seconds":5}`)
	id := v["id"].(string)
	v = f.waitStatus(id, "completed", 120*time.Second)
	fw, fh := frameSize(t, "720p", "16:9")
	checkMP4(t, f.download(v["video_url"].(string), "avatar.mp4"), 5, fw, fh, true)
	got := cog.Inputs()
	if len(got) != 1 {
		t.Fatalf("the container got %d predictions, want the one presenter", len(got))
	}
	if a, _ := got[0]["driven_audio"].(string); !strings.HasPrefix(a, "data:audio/wav") {
		t.Errorf("driven_audio = %.40q, want the narration as a WAV data URI", a)
	}
	if p, _ := got[0]["source_image"].(string); !strings.HasPrefix(p, "data:image/png;base64,") || len(got[0]) != 2 {
		t.Errorf("input %v, want source_image (the picture as a PNG data URI) and driven_audio only", got[0])
	}
}
