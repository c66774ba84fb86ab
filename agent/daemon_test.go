package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image"
	"image/color"
	"image/png"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/vidfarm/vidfarm/models"
	"github.com/vidfarm/vidfarm/pipeline"
	"github.com/vidfarm/vidfarm/scheduler"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

func TestRegisterAndHeartbeatHeldLeases(t *testing.T) {
	t.Parallel()
	f := newFakeCP(t)
	fails := 0
	f.RegisterStatus = func(n int) int { // the control plane is not up yet
		if n <= 2 {
			fails++
			return http.StatusServiceUnavailable
		}
		return 0
	}
	cfg := testConfig(t, f)
	gate := filepath.Join(t.TempDir(), "gate")
	cfg.Runners = map[string][]string{"wan-2.2-a14b": gateRunner(t, gate)}
	leftover := filepath.Join(cfg.WorkDir, "task-123", "clip.mp4")
	if err := os.MkdirAll(filepath.Dir(leftover), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(leftover, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := startAgent(t, cfg)

	waitFor(t, "registration", func() bool { return len(f.snapshot().registrations) == 3 })
	reg := f.snapshot().registrations[2]
	if reg.Name != "test-node" {
		t.Errorf("registered as %q", reg.Name)
	}
	c := reg.Capacity
	if !c.Virtual || len(c.GPUs) != 2 || c.GPUs[0].MemoryFreeGB != VirtualGPUMemoryGB || c.CPUSlots != 2 ||
		!slices.Equal(c.Tools, []string{"ffmpeg", "ffprobe", "espeak-ng"}) || !slices.Equal(c.Models, models.IDs()) {
		t.Errorf("capacity = %+v", c)
	}
	if !strings.Contains(r.logs.String(), "no NVIDIA GPU: advertising 2 procedural render slots on CPU; real models cannot run here") {
		t.Errorf("no loud log about virtual GPUs:\n%s", r.logs.String())
	}
	if _, err := os.Stat(filepath.Dir(leftover)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("leftover task dir of an earlier run not removed: %v", err)
	}

	a := assignment("vid_hb", "render", scheduler.KindRender, wire.Video{Mode: "manual", Model: "wan-2.2-a14b",
		Prompt: "a boat", Resolution: "480p", AspectRatio: "16:9", DurationSeconds: 5})
	f.enqueue(a)
	waitFor(t, "a heartbeat with the lease and its progress", func() bool {
		for _, hb := range f.snapshot().heartbeats {
			if len(hb.Leases) == 1 && hb.Leases[0].TaskID == a.TaskID && hb.Leases[0].Token == 1 && hb.Leases[0].Percent > 0 {
				return true
			}
		}
		return false
	})
	waitFor(t, "a progress report", func() bool { return len(f.snapshot().progress) > 0 })
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	done := waitComplete(t, f, a.TaskID)
	if key := done.Artifacts[ClipFile]; key != "videos/vid_hb/render/clip.mp4" || !bytes.Contains(f.blob(key), []byte("ftyp")) {
		t.Errorf("artifacts = %v", done.Artifacts)
	}
	for _, p := range f.snapshot().progress {
		if p.Percent < 0 || p.Percent >= 100 || p.Token != 1 {
			t.Errorf("progress report %+v", p)
		}
	}
	waitFor(t, "the work dir to empty", func() bool { return emptyDir(t, cfg.WorkDir) })
	waitFor(t, "a heartbeat without leases", func() bool {
		hbs := f.snapshot().heartbeats
		return len(hbs[len(hbs)-1].Leases) == 0
	})
}

func TestPlanTask(t *testing.T) {
	t.Parallel()
	f := newFakeCP(t)
	cfg := testConfig(t, f)
	startAgent(t, cfg)
	prompt := "A tour of an old lighthouse on a stormy coast. The keeper climbs the stairs at dusk."
	a := assignment("vid_plan", "plan", scheduler.KindPlan, wire.Video{Mode: "auto", Prompt: prompt, DurationSeconds: 30})
	f.enqueue(a)
	c := waitComplete(t, f, a.TaskID)
	want, err := pipeline.NewPlan(prompt, 30, pipeline.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Scenes != len(want.Scenes) || c.Scenes < 2 {
		t.Errorf("scenes = %d, want %d", c.Scenes, len(want.Scenes))
	}
	key := c.Artifacts[PlanFile]
	if key != "videos/vid_plan/plan/plan.json" {
		t.Fatalf("artifacts = %v", c.Artifacts)
	}
	var got pipeline.Plan
	if err := json.Unmarshal(f.blob(key), &got); err != nil {
		t.Fatal(err)
	}
	if got.DurationSeconds != 30 || len(got.Scenes) != c.Scenes || got.Scenes[0].Visual != want.Scenes[0].Visual {
		t.Errorf("plan.json = %+v", got)
	}
	waitFor(t, "the work dir to empty", func() bool { return emptyDir(t, cfg.WorkDir) })
}

// pngServer serves a small PNG over https from 127.0.0.1.
func pngServer(t *testing.T) *httptest.Server {
	img := image.NewRGBA(image.Rect(0, 0, 64, 48))
	for y := range 48 {
		for x := range 64 {
			img.Set(x, y, color.RGBA{uint8(4 * x), uint8(5 * y), 120, 255})
		}
	}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/boat.png" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "image/png")
		_ = png.Encode(w, img)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestManualRenderAndFinalize(t *testing.T) {
	t.Parallel()
	requireTools(t, "ffmpeg", "ffprobe")
	f := newFakeCP(t)
	images := pngServer(t)
	cfg := testConfig(t, f)
	cfg.AllowPrivateInputs = true // the image server is on 127.0.0.1
	cfg.InputRootCAs = images.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	r := startAgent(t, cfg)

	seedV := int64(7)
	v := wire.Video{Mode: "manual", Model: "kling-2.1-pro", Operation: pipeline.ImageToVideo, Prompt: "the boat sails away",
		Resolution: "120p", AspectRatio: "16:9", DurationSeconds: 2,
		VideoOptions: wire.VideoOptions{ImageURL: images.URL + "/boat.png", Seed: &seedV}}
	render := assignment("vid_manual", "render", scheduler.KindRender, v)
	render.GPUIDs = []string{"virtual-0"}
	f.enqueue(render)
	rc := waitComplete(t, f, render.TaskID)
	if rc.Artifacts[ClipFile] != "videos/vid_manual/render/clip.mp4" {
		t.Fatalf("render artifacts = %v", rc.Artifacts)
	}

	fin := assignment("vid_manual", "finalize", scheduler.KindFinalize, v)
	fin.Inputs = inputsOf(nil, "render", rc)
	f.enqueue(fin)
	fc := waitComplete(t, f, fin.TaskID)
	if len(fc.Artifacts) != 2 || fc.Artifacts[wire.ArtifactVideo] != "videos/vid_manual/finalize/video.mp4" ||
		fc.Artifacts[wire.ArtifactPoster] != "videos/vid_manual/finalize/poster.jpg" {
		t.Fatalf("finalize artifacts = %v", fc.Artifacts)
	}
	video := filepath.Join(t.TempDir(), "video.mp4")
	if err := os.WriteFile(video, f.blob(fc.Artifacts[wire.ArtifactVideo]), 0o644); err != nil {
		t.Fatal(err)
	}
	info, err := pipeline.Probe(context.Background(), video)
	if err != nil {
		t.Fatal(err)
	}
	if info.Width != 214 || info.Height != 120 || info.VideoCodec != "h264" || math.Abs(info.Duration.Seconds()-2) > 0.2 {
		t.Errorf("video.mp4: %+v", info)
	}
	if math.Abs(fc.DurationSeconds-info.Duration.Seconds()) > 0.05 {
		t.Errorf("reported duration %v, probed %v", fc.DurationSeconds, info.Duration)
	}
	if poster := f.blob(fc.Artifacts[wire.ArtifactPoster]); len(poster) < 3 || poster[0] != 0xFF || poster[1] != 0xD8 {
		t.Errorf("poster.jpg is not a JPEG")
	}
	waitFor(t, "the work dir to empty", func() bool { return emptyDir(t, cfg.WorkDir) })
	if !strings.Contains(r.logs.String(), "AllowPrivateInputs") {
		t.Error("AllowPrivateInputs is not logged")
	}
	for _, line := range strings.Split(r.logs.String(), "\n") {
		if strings.Contains(line, "task_id=vid_manual/render") && (!strings.Contains(line, "video_id=vid_manual") || !strings.Contains(line, "kind=render")) {
			t.Errorf("task log line without video_id and kind: %s", line)
		}
	}
}

func TestAutoVideo(t *testing.T) {
	t.Parallel()
	requireTools(t, "ffmpeg", "ffprobe", "espeak-ng")
	f := newFakeCP(t)
	cfg := testConfig(t, f)
	r := startAgent(t, cfg)
	// A kit whose only font no machine has: the captions fall back to the
	// default font, and the log says so.
	v := wire.Video{Mode: "auto", Prompt: "Bees build their hives from wax. They dance to share where flowers grow.",
		DurationSeconds: 10, Orientation: pipeline.Portrait, Resolution: "120p",
		VideoOptions: wire.VideoOptions{VoiceID: "en-us+f3", AvatarID: "av_stock_ben"},
		Brand:        &wire.Brand{Colors: []string{"#112233"}, Fonts: []string{"No Such Typeface"}, MotionStyle: pipeline.MotionDynamic}}

	plan := assignment("vid_auto", "plan", scheduler.KindPlan, v)
	f.enqueue(plan)
	pc := waitComplete(t, f, plan.TaskID)
	inputs := inputsOf(nil, "plan", pc)

	tts := assignment("vid_auto", "tts", scheduler.KindTTS, v)
	tts.Inputs = inputs
	f.enqueue(tts)
	var scenes []wire.Assignment
	for i := 1; i <= pc.Scenes; i++ {
		s := assignment("vid_auto", sceneName(i), scheduler.KindScene, v)
		s.Inputs = inputs
		scenes = append(scenes, s)
	}
	f.enqueue(scenes...)
	all := map[string]string{}
	inputsOf(all, "plan", pc)
	tc := waitComplete(t, f, tts.TaskID)
	inputsOf(all, "tts", tc)
	var lines []pipeline.SpokenLine
	if err := json.Unmarshal(f.blob(tc.Artifacts[LinesFile]), &lines); err != nil || len(lines) == 0 {
		t.Fatalf("lines.json: %v, %d lines", err, len(lines))
	}
	for _, l := range lines {
		if key := tc.Artifacts[l.Audio]; key != "videos/vid_auto/tts/"+l.Audio || len(f.blob(key)) == 0 || l.Duration <= 0 {
			t.Errorf("line %+v: audio not uploaded as its file name", l)
		}
	}
	for _, s := range scenes {
		inputsOf(all, s.Name, waitComplete(t, f, s.TaskID))
	}
	comp := assignment("vid_auto", "composite", scheduler.KindComposite, v)
	comp.Inputs = all
	f.enqueue(comp)
	cc := waitComplete(t, f, comp.TaskID)
	for _, name := range []string{wire.ArtifactVideo, wire.ArtifactVideoNoCaptions, wire.ArtifactCaptionsSRT, wire.ArtifactCaptionsVTT} {
		if cc.Artifacts[name] != "videos/vid_auto/composite/"+name || len(f.blob(cc.Artifacts[name])) == 0 {
			t.Errorf("artifact %s missing: %v", name, cc.Artifacts)
		}
	}
	if math.Abs(cc.DurationSeconds-10) > 0.5 {
		t.Errorf("duration %v, want 10 s", cc.DurationSeconds)
	}
	if !strings.Contains(string(f.blob(cc.Artifacts[wire.ArtifactCaptionsVTT])), "WEBVTT") {
		t.Error("captions.vtt is not WebVTT")
	}
	if !strings.Contains(r.logs.String(), "none of the brand kit's fonts is installed on this node") {
		t.Error("no warning that the kit's font is missing")
	}
	waitFor(t, "the work dir to empty", func() bool { return emptyDir(t, cfg.WorkDir) })
}

func TestStaleLeaseCancelsTask(t *testing.T) {
	t.Parallel()
	f := newFakeCP(t)
	cfg := testConfig(t, f)
	started := filepath.Join(t.TempDir(), "started")
	// A runner that would render forever: it must be killed.
	cfg.Runners = map[string][]string{"veo-3": {"sh", "-c", `cat >/dev/null; touch "$1"; echo "progress 30"; exec sleep 60`, "sh", started}}
	r := startAgent(t, cfg)
	a := assignment("vid_stale", "render", scheduler.KindRender, wire.Video{Mode: "manual", Model: "veo-3",
		Prompt: "p", Resolution: "720p", AspectRatio: "16:9", DurationSeconds: 4})
	f.enqueue(a)
	waitFor(t, "the runner to start", func() bool { _, err := os.Stat(started); return err == nil })

	f.expire(a.TaskID) // the lease went to another node
	waitFor(t, "the agent to drop the task", func() bool {
		return strings.Contains(r.logs.String(), "task dropped: its lease is stale")
	})
	if !strings.Contains(r.logs.String(), "lease is stale (heartbeat)") {
		t.Error("the task was not stopped by the heartbeat's answer")
	}
	waitFor(t, "the work dir to empty", func() bool { return emptyDir(t, cfg.WorkDir) })
	waitFor(t, "a heartbeat without the lease", func() bool {
		hbs := f.snapshot().heartbeats
		return len(hbs[len(hbs)-1].Leases) == 0
	})
	rec := f.snapshot()
	if len(rec.completes) != 0 || len(rec.fails) != 0 {
		t.Errorf("reports after a stale lease: completes %v, fails %v", rec.completes, rec.fails)
	}
	for _, ref := range rec.refused {
		if !strings.HasPrefix(ref, "progress ") {
			t.Errorf("the agent sent a report for the stale lease: %s", ref)
		}
	}
}

// TestStaleHeartbeatLeavesATakenCompleteAlone: the control plane takes a
// complete report, and a heartbeat crossing it names the lease stale (the
// report ended it). The agent must not cancel its report then: the
// completion counts, and the agent says so (CI once saw it call such a
// completion refused).
func TestStaleHeartbeatLeavesATakenCompleteAlone(t *testing.T) {
	t.Parallel()
	f := newFakeCP(t)
	f.AfterComplete = func(string) {
		f.mu.Lock()
		n := len(f.heartbeats)
		f.mu.Unlock()
		// Two heartbeats after the lease went: the second was sent after
		// the first's answer (stale) reached the agent.
		// A handler goroutine may not call t.Fatal: give up quietly, and
		// the log check below fails instead.
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			f.mu.Lock()
			crossed := len(f.heartbeats) >= n+2
			f.mu.Unlock()
			if crossed {
				return
			}
		}
	}
	cfg := testConfig(t, f)
	gate := filepath.Join(t.TempDir(), "open")
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.Runners = map[string][]string{"wan-2.2-a14b": gateRunner(t, gate)}
	r := startAgent(t, cfg)
	a := assignment("vid_crossed", "render", scheduler.KindRender, wire.Video{Mode: "manual", Model: "wan-2.2-a14b",
		Prompt: "p", Resolution: "720p", AspectRatio: "16:9", DurationSeconds: 4})
	f.enqueue(a)
	waitFor(t, "the agent to settle the task", func() bool {
		logs := r.logs.String()
		return strings.Contains(logs, "task completed") || strings.Contains(logs, "result discarded")
	})
	if _, ok := f.complete(a.TaskID); !ok {
		t.Fatal("the fake did not take the complete report")
	}
	logs := r.logs.String()
	if !strings.Contains(logs, "lease is stale (heartbeat) while its report is under way") {
		t.Error("no heartbeat named the lease stale while the report was under way; the test proves nothing")
	}
	if strings.Contains(logs, "result discarded") || !strings.Contains(logs, "task completed") {
		t.Errorf("a completion the control plane took was called refused:\n%s", logs)
	}
}

func TestFailingRunnerReportsFail(t *testing.T) {
	t.Parallel()
	f := newFakeCP(t)
	cfg := testConfig(t, f)
	cfg.Runners = map[string][]string{"sora-2": {"sh", "-c", "cat >/dev/null; echo 'loading weights' >&2; printf 'CUDA out of memory:\\n tried to allocate 2 GiB\\n' >&2; exit 3"}}
	startAgent(t, cfg)
	a := assignment("vid_fail", "render", scheduler.KindRender, wire.Video{Mode: "manual", Model: "sora-2",
		Prompt: "p", Resolution: "720p", AspectRatio: "16:9", DurationSeconds: 4})
	f.enqueue(a)
	var fr wire.FailRequest
	waitFor(t, "the fail report", func() bool {
		var ok bool
		fr, ok = f.failed(a.TaskID)
		return ok
	})
	if fr.Token != 1 || !strings.Contains(fr.Reason, "CUDA out of memory: tried to allocate 2 GiB") ||
		!strings.Contains(fr.Reason, "status 3") || strings.Contains(fr.Reason, "\n") {
		t.Errorf("fail reason = %q", fr.Reason)
	}
	if _, ok := f.complete(a.TaskID); ok {
		t.Error("a failed task was completed")
	}
	waitFor(t, "the work dir to empty", func() bool { return emptyDir(t, cfg.WorkDir) })
}

func TestDrainFinishesRunningTaskThenDeregisters(t *testing.T) {
	t.Parallel()
	f := newFakeCP(t)
	cfg := testConfig(t, f)
	cfg.Workers = 1
	gate := filepath.Join(t.TempDir(), "gate")
	cfg.Runners = map[string][]string{"wan-2.2-a14b": gateRunner(t, gate)}
	r := startAgent(t, cfg)
	v := wire.Video{Mode: "manual", Model: "wan-2.2-a14b", Prompt: "p", Resolution: "480p", AspectRatio: "16:9", DurationSeconds: 5}
	first := assignment("vid_drain1", "render", scheduler.KindRender, v)
	f.enqueue(first)
	waitFor(t, "the first task to be leased", func() bool { return len(f.snapshot().leased) == 1 })
	// The fake records a lease when it answers; the agent holds the task once it
	// heartbeats it. Cancelling before that would drop the answer, not drain a task.
	waitFor(t, "a heartbeat holding the first task", func() bool {
		for _, hb := range f.snapshot().heartbeats {
			if len(hb.Leases) == 1 && hb.Leases[0].TaskID == first.TaskID {
				return true
			}
		}
		return false
	})
	asks := f.snapshot().leaseAsks // the only worker is busy from here on
	second := assignment("vid_drain2", "render", scheduler.KindRender, v)
	f.enqueue(second)

	r.cancel() // SIGTERM
	waitFor(t, "a draining heartbeat", func() bool {
		for _, hb := range f.snapshot().heartbeats {
			if hb.Draining && len(hb.Leases) == 1 {
				return true
			}
		}
		return false
	})
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := r.stop(t); err != nil {
		t.Fatalf("Run = %v", err)
	}
	rec := f.snapshot()
	if _, ok := rec.completes[first.TaskID]; !ok {
		t.Errorf("the running task did not complete during the drain")
	}
	if rec.deregistered != 1 {
		t.Errorf("deregistered %d times", rec.deregistered)
	}
	if !slices.Equal(rec.leased, []string{first.TaskID}) || rec.queued != 1 || rec.leaseAsks != asks {
		t.Errorf("leased %v, %d queued, %d lease requests after the drain: a draining agent asked for work",
			rec.leased, rec.queued, rec.leaseAsks-asks)
	}
	if !emptyDir(t, cfg.WorkDir) {
		t.Error("work dir not empty after the drain")
	}
}

func TestDrainTimeoutCancelsAndHandsBack(t *testing.T) {
	t.Parallel()
	f := newFakeCP(t)
	cfg := testConfig(t, f)
	cfg.DrainTimeout = 100 * time.Millisecond
	r := stuckRender(t, f, cfg, "vid_slow")
	if err := r.stop(t); err != nil {
		t.Fatalf("Run = %v", err)
	}
	handedBack(t, f, cfg)
}

// stuckRender starts an agent on cfg whose veo-3 runner never ends, gives
// it a render of video id and waits until the runner runs.
func stuckRender(t *testing.T, f *fakeCP, cfg Config, id string) *running {
	t.Helper()
	started := filepath.Join(t.TempDir(), "started")
	cfg.Runners = map[string][]string{"veo-3": {"sh", "-c", `cat >/dev/null; touch "$1"; exec sleep 600`, "sh", started}}
	r := startAgent(t, cfg)
	f.enqueue(assignment(id, "render", scheduler.KindRender, wire.Video{Mode: "manual", Model: "veo-3",
		Prompt: "p", Resolution: "720p", AspectRatio: "16:9", DurationSeconds: 4}))
	waitFor(t, "the runner to start", func() bool { _, err := os.Stat(started); return err == nil })
	return r
}

// handedBack checks what a stop that cancelled a running task leaves: the
// task reported nothing, the node deregistered once (which hands the task
// back) holding no lease, and the work dir is empty.
func handedBack(t *testing.T, f *fakeCP, cfg Config) {
	t.Helper()
	rec := f.snapshot()
	if len(rec.completes) != 0 || len(rec.fails) != 0 || len(rec.refused) != 0 {
		t.Errorf("a cancelled task reported: %+v", rec)
	}
	if rec.deregistered != 1 || rec.held != 0 {
		t.Errorf("deregistered %d times, %d leases still held", rec.deregistered, rec.held)
	}
	if !emptyDir(t, cfg.WorkDir) {
		t.Error("work dir not empty after the stop")
	}
}

// TestStopNowEndsDrain: a second stop (Config.StopNow: the second SIGTERM
// or Ctrl-C) while the agent drains a task ends the drain at once, long
// before its timeout: the task is cancelled and reports nothing, the node
// deregisters (which hands the task back) and Run returns.
func TestStopNowEndsDrain(t *testing.T) {
	t.Parallel()
	f := newFakeCP(t)
	cfg := testConfig(t, f)
	cfg.DrainTimeout = time.Hour
	stopNow := make(chan struct{})
	cfg.StopNow = stopNow
	r := stuckRender(t, f, cfg, "vid_stuck")
	r.cancel() // the first signal
	waitFor(t, "the drain", func() bool { return strings.Contains(r.logs.String(), "draining: leasing no new work") })
	close(stopNow) // the second
	select {
	case err := <-r.done:
		r.done <- err // for the cleanup
		if err != nil {
			t.Fatalf("Run = %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run still draining 30 s after the second stop, with an hour's drain timeout")
	}
	handedBack(t, f, cfg)
	logs := r.logs.String()
	for _, want := range []string{
		`level=WARN msg="second signal: stopping without waiting for the running tasks; deregistering hands them to other nodes" tasks=1`,
		`msg="task dropped" task_id=vid_stuck/render`,
		`why="agent stopping: told to stop without waiting (a second signal)"`,
		`msg="deregistered; agent stopped"`,
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("no %s in the logs:\n%s", want, logs)
		}
	}
}

// TestStopOnSignals: the first signal ends the drain context only, the
// second closes the stop-now channel; stop ends the drain without one.
func TestStopOnSignals(t *testing.T) {
	t.Parallel()
	ch := make(chan os.Signal)
	drain, now, stop := stopOnSignals(ch)
	defer stop()
	if drain.Err() != nil || isClosed(now) {
		t.Fatal("stopping before any signal")
	}
	ch <- syscall.SIGTERM // unbuffered: taken once the watcher has it
	waitFor(t, "the drain context to end", func() bool { return drain.Err() != nil })
	if isClosed(now) {
		t.Fatal("one signal closed the stop-now channel")
	}
	ch <- os.Interrupt
	waitFor(t, "the stop-now channel to close", func() bool { return isClosed(now) })

	drain, now, stop = stopOnSignals(make(chan os.Signal))
	stop()
	stop() // twice is fine
	if drain.Err() == nil || isClosed(now) {
		t.Errorf("after stop: drain %v, stop-now closed %v; want drain ended, stop-now open", drain.Err(), isClosed(now))
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestUnauthorizedRegistersAgain(t *testing.T) {
	t.Parallel()
	f := newFakeCP(t)
	cfg := testConfig(t, f)
	started := filepath.Join(t.TempDir(), "started")
	cfg.Runners = map[string][]string{"veo-3": {"sh", "-c", `cat >/dev/null; touch "$1"; exec sleep 60`, "sh", started}}
	r := startAgent(t, cfg)
	a := assignment("vid_401", "render", scheduler.KindRender, wire.Video{Mode: "manual", Model: "veo-3",
		Prompt: "p", Resolution: "720p", AspectRatio: "16:9", DurationSeconds: 4})
	f.enqueue(a)
	waitFor(t, "the runner to start", func() bool { _, err := os.Stat(started); return err == nil })
	f.forget()
	waitFor(t, "a second registration", func() bool { return len(f.snapshot().registrations) == 2 })
	// The old credential's lease is gone: the task is dropped, the agent
	// goes on with the new credential.
	waitFor(t, "the task to be dropped", func() bool { return emptyDir(t, cfg.WorkDir) })
	p := assignment("vid_401", "plan", scheduler.KindPlan, wire.Video{Mode: "auto", Prompt: "Tides rise and fall.", DurationSeconds: 5})
	f.enqueue(p)
	waitComplete(t, f, p.TaskID)
	if _, ok := f.complete(a.TaskID); ok {
		t.Error("the task of the lost credential completed")
	}
	if !strings.Contains(r.logs.String(), "401") {
		t.Error("the 401 is not logged")
	}
}

func TestRegistrationRefused(t *testing.T) {
	t.Parallel()
	f := newFakeCP(t)
	cfg := testConfig(t, f)
	cfg.Token = "wrong"
	r := startAgent(t, cfg)
	select {
	case err := <-r.done:
		r.done <- err
		if !errors.Is(err, ErrRegistrationRefused) || !strings.Contains(err.Error(), "401") {
			t.Errorf("Run = %v, want ErrRegistrationRefused with the 401", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Run did not return")
	}
}

func TestStopBeforeRegistration(t *testing.T) {
	t.Parallel()
	f := newFakeCP(t)
	f.RegisterStatus = func(int) int { return http.StatusServiceUnavailable }
	r := startAgent(t, testConfig(t, f))
	waitFor(t, "registration attempts", func() bool { return len(f.snapshot().registrations) >= 2 })
	if err := r.stop(t); err != nil {
		t.Errorf("Run = %v", err)
	}
	if f.snapshot().deregistered != 0 {
		t.Error("deregistered a node that never registered")
	}
}

func TestWorkDirFullStopsLeasing(t *testing.T) {
	t.Parallel()
	f := newFakeCP(t)
	cfg := testConfig(t, f)
	cfg.WorkDirMaxBytes = 1000
	if err := os.MkdirAll(cfg.WorkDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfg.WorkDir, "big"), make([]byte, 2000), 0o644); err != nil {
		t.Fatal(err)
	}
	r := startAgent(t, cfg)
	waitFor(t, "the log about the full work dir", func() bool {
		return strings.Contains(r.logs.String(), "work dir is over its limit")
	})
	waitFor(t, "ten heartbeats", func() bool { return len(f.snapshot().heartbeats) >= 10 })
	if n := f.snapshot().leaseAsks; n != 0 {
		t.Errorf("%d lease requests while the work dir is full", n)
	}
	// The heartbeats say why, for the operator: the node looks idle.
	hb := f.snapshot().heartbeats
	if p := hb[len(hb)-1].Paused; !strings.Contains(p, "over --work-dir-max-bytes 1000") {
		t.Errorf("heartbeat paused %q, want the work dir's limit named", p)
	}
	// Back under the limit, the node leases again and says so.
	if err := os.Remove(filepath.Join(cfg.WorkDir, "big")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a heartbeat no longer paused", func() bool {
		hb := f.snapshot().heartbeats
		return hb[len(hb)-1].Paused == ""
	})
}

func TestUnknownKindFails(t *testing.T) {
	t.Parallel()
	f := newFakeCP(t)
	startAgent(t, testConfig(t, f))
	a := assignment("vid_odd", "upscale", scheduler.Kind("upscale"), wire.Video{Mode: "manual"})
	b := assignment("vid_odd2", "scene-0009", scheduler.KindScene, wire.Video{Mode: "auto"})
	f.enqueue(a, b)
	for id, want := range map[string]string{a.TaskID: `task kind "upscale"`, b.TaskID: `input "plan/plan.json" is missing`} {
		expectFailed(t, f, id, want)
	}
}

func TestExternalRunnerSeesLeasedGPUs(t *testing.T) {
	t.Parallel()
	f := newFakeCP(t)
	cfg := testConfig(t, f)
	cfg.Discover = func() (Capacity, error) { return migCapacity(), nil }
	requireTools(t, "ffmpeg", "ffprobe")
	saw := filepath.Join(t.TempDir(), "cuda_visible_devices")
	const script = `req=$(cat)
printf '%s' "$CUDA_VISIBLE_DEVICES" > "$1"
` + writeClip
	cfg.Runners = map[string][]string{"hunyuan-video": {"sh", "-c", script, "sh", saw}}
	startAgent(t, cfg)
	waitFor(t, "registration", func() bool { return len(f.snapshot().registrations) == 1 })
	if c := f.snapshot().registrations[0].Capacity; c.Virtual || len(c.GPUs) != 2 || !c.GPUs[1].MIG {
		t.Errorf("GPU node capacity: %+v", c)
	}
	a := assignment("vid_gpu", "render", scheduler.KindRender, wire.Video{Mode: "manual", Model: "hunyuan-video",
		Prompt: "p", Resolution: "720p", AspectRatio: "16:9", DurationSeconds: 5})
	a.GPUIDs = []string{"GPU-a1000000-0000-0000-0000-000000000000"}
	f.enqueue(a)
	waitComplete(t, f, a.TaskID)
	if got, err := os.ReadFile(saw); err != nil || string(got) != a.GPUIDs[0] {
		t.Errorf("runner saw CUDA_VISIBLE_DEVICES=%q, want %q", got, a.GPUIDs[0])
	}
}

// TestHungRunnerTimesOut: a runner that never finishes is stopped at the
// task timeout and the task reported failed, saying why.
func TestHungRunnerTimesOut(t *testing.T) {
	t.Parallel()
	f := newFakeCP(t)
	cfg := testConfig(t, f)
	cfg.TaskTimeout = 300 * time.Millisecond
	cfg.Runners = map[string][]string{"sora-2": {"sh", "-c", "cat >/dev/null; echo 'progress 5'; exec sleep 600"}}
	startAgent(t, cfg)
	a := assignment("vid_hung", "render", scheduler.KindRender, wire.Video{Mode: "manual", Model: "sora-2",
		Prompt: "p", Resolution: "720p", AspectRatio: "16:9", DurationSeconds: 4})
	f.enqueue(a)
	expectFailed(t, f, a.TaskID, "task timeout (300ms)")
	waitFor(t, "the work dir to empty", func() bool { return emptyDir(t, cfg.WorkDir) })
}

// A paused reason past the heartbeat's bound is cut to it, and never
// inside a rune: the control plane refuses a heartbeat whose reason is not
// UTF-8, and with it the renewal of every lease the beat carries.
func TestPausedReasonCutOnARune(t *testing.T) {
	a := &agent{hbNow: make(chan struct{}, 1)}
	a.setPaused("work dir /srv/x" + strings.Repeat("é", wire.MaxPausedLen) + " is over its limit")
	if len(a.paused) > wire.MaxPausedLen || !utf8.ValidString(a.paused) || len(a.paused) < wire.MaxPausedLen-1 {
		t.Fatalf("paused is %d bytes, valid UTF-8 %v; want at most %d, valid", len(a.paused), utf8.ValidString(a.paused), wire.MaxPausedLen)
	}
	select {
	case <-a.hbNow:
	default:
		t.Error("a new reason asked for no heartbeat")
	}
}
