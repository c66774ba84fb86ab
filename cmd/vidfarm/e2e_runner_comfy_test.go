package main

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/internal/fakes"
	"github.com/vidfarm/vidfarm/models"
)

// e2eClip is a real clip of what manualBody asks for (854x480, 5 s) made
// once per test: the fake ComfyUI's output nodes save it.
func e2eClip(t *testing.T, dir string, seconds int) []byte {
	t.Helper()
	fw, fh := frameSize(t, e2eResolution, e2eAspect)
	out := filepath.Join(dir, fmt.Sprintf("clip-%ds.mp4", seconds))
	src := fmt.Sprintf("testsrc2=s=%dx%d:r=24:d=%d", fw, fh, seconds)
	if msg, err := exec.Command("ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", src, "-c:v", "libx264", "-preset", "ultrafast",
		"-pix_fmt", "yuv420p", out).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg: %v\n%s", err, msg)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// startComfy starts a fake ComfyUI (internal/fakes) that saves clip.
func startComfy(t *testing.T, clip []byte, setup ...func(*fakes.ComfyUI)) *fakes.ComfyUI {
	return fakes.NewComfyUI(t, clip, setup...)
}

// comfyRunnersFile writes a runners file with a comfyui runner of e2eModel
// at server, with deploy/runners/comfyui-wan-t2v.json as its workflow.
func comfyRunnersFile(t *testing.T, dir, name, server string) string {
	t.Helper()
	wf, err := os.ReadFile("../../deploy/runners/comfyui-wan-t2v.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "wan-t2v.json"), wf, 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, name+".yaml")
	body := fmt.Sprintf(`version: 1
runners:
  - name: %s
    kind: comfyui
    url: %s
    models: [%s]
    gpu_memory_gb: 40
    health_interval: 200ms
    workflow: ./wan-t2v.json
    output_node: "58"
`, name, server, e2eModel)
	if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// comfyPrompts is every prompt the server was sent.
func comfyPrompts(c *fakes.ComfyUI) []*fakes.ComfyPrompt {
	c.Mu.Lock()
	defer c.Mu.Unlock()
	return slices.Clone(c.All)
}

// comfyInterrupted reports whether the prompt id was interrupted or
// deleted from the queue.
func comfyInterrupted(c *fakes.ComfyUI, id string) bool {
	c.Mu.Lock()
	defer c.Mu.Unlock()
	return slices.Contains(c.Interrupts, id) || slices.Contains(c.Deleted, id)
}

// processingWith waits until the video renders with progress.percent of at
// least percent.
func (f *e2eFarm) processingWith(id string, percent float64) {
	f.t.Helper()
	f.waitVideo(id, 60*time.Second, fmt.Sprintf("processing at %v%% or more", percent), func(v map[string]any) bool {
		return v["status"] == "processing" && percentOf(v) >= percent
	})
}

// TestE2EComfyUIRunner: an agent with a comfyui runner renders a manual
// video through a ComfyUI server: the workflow's placeholders carry the
// request, the sampler's progress reaches progress.percent, the clip is the
// server's. A server whose /view answers garbage fails the next video, which
// is refunded.
func TestE2EComfyUIRunner(t *testing.T) {
	const grant = 100
	f := newE2EFarm(t, grant)
	gate := make(chan struct{})
	comfy := startComfy(t, e2eClip(t, f.dir, 5), func(c *fakes.ComfyUI) { c.Gate = gate })
	f.startAgent("agent-comfy", "--runners", comfyRunnersFile(t, f.dir, "comfy", comfy.URL()))

	id := f.createVideo(manualBody("a lighthouse in the rain", ""))["id"].(string)
	// The sampler holds at 10 of 20 steps: the render is about halfway.
	f.processingWith(id, 30)
	close(gate)
	v := f.waitStatus(id, "completed", 60*time.Second)
	fw, fh := frameSize(t, e2eResolution, e2eAspect)
	checkMP4(t, f.download(v["video_url"].(string), "comfy.mp4"), 5, fw, fh, false)
	prompts := comfyPrompts(comfy)
	if len(prompts) != 1 {
		t.Fatalf("the server got %d prompts, want 1", len(prompts))
	}
	nodes := prompts[0].Nodes
	if got := nodes["6"].Inputs["text"]; got != "a lighthouse in the rain" {
		t.Errorf("the prompt node got %v", got)
	}
	if w, h, n := nodes["55"].Inputs["width"], nodes["55"].Inputs["height"], nodes["55"].Inputs["length"]; w != float64(fw) || h != float64(fh) || n != float64(5*24) {
		t.Errorf("the latent node got %vx%v, %v frames; want %dx%d, 120", w, h, n, fw, fh)
	}

	comfy.Mu.Lock()
	comfy.View = func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "video/mp4")
		fmt.Fprint(w, "<html>502 Bad Gateway</html>")
	}
	comfy.Mu.Unlock()
	v = f.createVideo(manualBody("a garbled render", ""))
	v = f.waitStatus(v["id"].(string), "failed", 90*time.Second)
	e, _ := v["error"].(map[string]any)
	if e == nil || e["credits_refunded"] != true {
		t.Fatalf("failed video without a refunded error: %v", v)
	}
	t.Logf("error.message: %s", e["message"])
	if got := f.balance(); got != grant-manualPrice {
		t.Fatalf("balance %d, want %d: the first video charged, the garbled one refunded", got, grant-manualPrice)
	}
}

// TestE2EComfyUILeaseLoss: agent A is stopped (SIGSTOP) past its lease
// while ComfyUI runs its prompt; agent B, with a ComfyUI of its own,
// renders the video. When A resumes it learns that its lease is stale and
// the prompt it queued is interrupted on its ComfyUI.
func TestE2EComfyUILeaseLoss(t *testing.T) {
	f := newE2EFarm(t, 100)
	clip := e2eClip(t, f.dir, 5)
	gate := make(chan struct{})
	comfyA := startComfy(t, clip, func(c *fakes.ComfyUI) { c.Gate = gate })
	a := f.startAgent("agent-a", "--runners", comfyRunnersFile(t, f.dir, "comfy-a", comfyA.URL()))
	id := f.createVideo(manualBody("a kite over a beach", ""))["id"].(string)
	f.processingWith(id, 30)
	first := comfyPrompts(comfyA)[0].ID

	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "the render's lease on agent A expired", func() bool {
		return len(findLogs(f.srv, "lease expired", "task_id", id+"/render", "node_id", a.nodeID)) > 0
	})
	comfyB := startComfy(t, clip)
	f.startAgent("agent-b", "--runners", comfyRunnersFile(t, f.dir, "comfy-b", comfyB.URL()))
	if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "agent A's prompt interrupted on its ComfyUI", func() bool { return comfyInterrupted(comfyA, first) })
	// A may have leased the task again before B did (a poll sent before it
	// stopped): its second prompt may finish now.
	close(gate)
	f.waitStatus(id, "completed", 60*time.Second)
}

// TestE2EComfyUIServerDies: the ComfyUI of agent A dies while it runs the
// prompt. A fails the task and withdraws the model (its health check
// fails); agent B, with a ComfyUI that works, renders the retry.
func TestE2EComfyUIServerDies(t *testing.T) {
	f := newE2EFarm(t, 100)
	clip := e2eClip(t, f.dir, 5)
	comfyA := startComfy(t, clip, func(c *fakes.ComfyUI) { c.Gate = make(chan struct{}) })
	a := f.startAgent("agent-a", "--runners", comfyRunnersFile(t, f.dir, "comfy-a", comfyA.URL()))
	comfyB := startComfy(t, clip)
	id := f.createVideo(manualBody("a storm over the sea", ""))["id"].(string)
	f.processingWith(id, 30)

	comfyA.Close()
	eventually(t, 30*time.Second, "agent A withdrew the model", func() bool {
		return len(findLogs(a.proc, "runner is not healthy: its models are withdrawn until it is")) > 0 &&
			len(findLogs(a.proc, "advertised capacity updated in place")) > 0
	})
	b := f.startAgent("agent-b", "--runners", comfyRunnersFile(t, f.dir, "comfy-b", comfyB.URL()))
	f.waitStatus(id, "completed", 60*time.Second)
	if len(findLogs(f.srv, "task completed", "task_id", id+"/render", "node_id", b.nodeID)) != 1 {
		t.Errorf("the render was not completed by agent B")
	}
	if len(comfyPrompts(comfyB)) != 1 {
		t.Errorf("agent B's ComfyUI got %d prompts, want 1", len(comfyPrompts(comfyB)))
	}
}

// TestE2EAutoVideoScenesThroughComfyUI: an auto video whose scene model
// is served by a ComfyUI runner. Every scene is one prompt to the server,
// with the planner's visual prompt for it; the planner, the voice and the
// composite run on the agent as before, and the video is the length asked.
func TestE2EAutoVideoScenesThroughComfyUI(t *testing.T) {
	f := newE2EFarm(t, 1000)
	out := filepath.Join(f.dir, "scene.mp4")
	if msg, err := exec.Command("ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=s=1280x720:r=24:d=12", "-c:v", "libx264",
		"-preset", "ultrafast", "-pix_fmt", "yuv420p", out).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg: %v\n%s", err, msg)
	}
	clip, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	comfy := startComfy(t, clip)
	runners := comfyRunnersFile(t, f.dir, "comfy-scenes", comfy.URL())
	body, err := os.ReadFile(runners)
	if err != nil {
		t.Fatal(err)
	}
	body = []byte(strings.Replace(string(body), "models: ["+e2eModel+"]", "models: ["+models.AutoSceneModel+"]", 1))
	if err := os.WriteFile(runners, body, 0o644); err != nil {
		t.Fatal(err)
	}
	ag := f.startAgent("agent-comfy", "--runners", runners)

	v := f.createVideo(`{"mode":"auto","prompt":"why our solar lamps outlast the rest","duration_seconds":15}`)
	v = f.waitStatus(v["id"].(string), "completed", 120*time.Second)
	checkMP4(t, f.download(v["video_url"].(string), "auto.mp4"), 15, 1280, 720, true)
	prompts := comfyPrompts(comfy)
	scenes := len(findLogs(ag.proc, "task completed", "kind", "scene"))
	if scenes < 2 || len(prompts) != scenes {
		t.Fatalf("the plan made %d scenes of a 15 s auto video; the server rendered %d", scenes, len(prompts))
	}
	seen := map[string]bool{}
	for _, pr := range prompts {
		text, _ := pr.Nodes["6"].Inputs["text"].(string)
		if text == "" || seen[text] {
			t.Errorf("scene prompt %q: want a distinct visual prompt per scene", text)
		}
		seen[text] = true
	}
}
