package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vidfarm/vidfarm/models"
	"github.com/vidfarm/vidfarm/pipeline"
	"github.com/vidfarm/vidfarm/scheduler"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

// Files tasks write besides the wire.Artifact* ones.
const (
	// PlanFile is the plan task's artifact: the pipeline.Plan as JSON.
	PlanFile = "plan.json"
	// LinesFile is the tts task's artifact that lists the spoken lines
	// (pipeline.SpokenLine, each Audio the name of one of the task's WAV
	// files).
	LinesFile = "lines.json"
	// ClipFile is the artifact of render and scene tasks: the runner's clip.
	ClipFile = "clip.mp4"
)

// errBadAssignment means an assignment cannot be run as given: an unknown
// kind, a malformed scene name, a missing input.
var errBadAssignment = errors.New("assignment cannot be run")

// job is one task's stage as it runs: the assignment, its directory, and
// what it will report on completion.
type job struct {
	a   *agent
	t   *task
	asg *wire.Assignment
	v   *wire.Video
	dir string
	res wire.CompleteRequest
}

// execute runs the stage of t's kind in a fresh task directory, removed
// before it returns, and returns the completion to report.
func (a *agent) execute(ctx context.Context, t *task) (wire.CompleteRequest, error) {
	dir, err := os.MkdirTemp(a.cfg.WorkDir, taskDirPrefix+"*")
	if err != nil {
		return wire.CompleteRequest{}, fmt.Errorf("task directory: %w", err)
	}
	defer removeTaskDir(t, dir)
	j := &job{a: a, t: t, asg: &t.asg, v: &t.asg.Video, dir: dir, res: wire.CompleteRequest{Artifacts: map[string]string{}}}
	switch t.asg.Kind {
	case scheduler.KindPlan:
		err = j.plan(ctx)
	case scheduler.KindTTS:
		err = j.tts(ctx)
	case scheduler.KindScene:
		err = j.scene(ctx)
	case scheduler.KindComposite:
		err = j.composite(ctx)
	case scheduler.KindRender:
		err = j.render(ctx)
	case scheduler.KindFinalize:
		err = j.finalize(ctx)
	case scheduler.KindAvatar:
		err = j.avatar(ctx)
	case scheduler.KindSpeech:
		err = j.speech(ctx)
	default:
		err = fmt.Errorf("%w: this agent does not know task kind %q (task %q)", errBadAssignment, t.asg.Kind, t.asg.Name)
	}
	return j.res, err
}

// span returns a ProgressFunc that maps a stage's 0–100 onto [lo, hi] of
// the task's percent.
func (j *job) span(lo, hi float64) pipeline.ProgressFunc {
	return func(p int) { j.t.setPercent(lo + (hi-lo)*float64(p)/100) }
}

// path is a file in the task directory.
func (j *job) path(elem ...string) string {
	return filepath.Join(append([]string{j.dir}, elem...)...)
}

// blobKey is where the task's file name goes: videos/<video>/<task>/<name>.
func (j *job) blobKey(name string) string {
	return "videos/" + j.v.ID + "/" + j.asg.Name + "/" + name
}

// withRetry runs a blob transfer, retrying transient errors (a control
// plane restarting or electing a leader: refused connections, 503) at
// least blobAttempts times and then for as long as the task's lease may
// still be valid (task.retryWait): heartbeats renew it once the control
// plane is back, so an outage shorter than the lease costs a finished
// render nothing. A 401 makes the agent register again (which cancels
// this task).
func (j *job) withRetry(ctx context.Context, fn func(ctx context.Context, cred string) error) error {
	b := j.a.backoff()
	for attempt := 1; ; attempt++ {
		cred, gen := j.a.session()
		cctx, cancel := context.WithTimeout(ctx, blobTimeout)
		err := fn(cctx, cred)
		cancel()
		if err == nil || j.a.unauthorized(err, gen) || !transient(err) || ctx.Err() != nil {
			return err
		}
		wait, ok := j.t.retryWait(b, attempt, blobAttempts)
		if !ok {
			j.t.log.Error("blob transfer failed; giving up: the lease has run out unless a heartbeat got through",
				"tries", attempt, "err", err)
			return err
		}
		j.t.log.Warn("blob transfer failed; retrying", "try", attempt, "retry_in", wait.Round(time.Millisecond).String(), "err", err)
		if !sleep(ctx, wait) {
			return err
		}
	}
}

// upload sends the local file as the task's artifact name.
func (j *job) upload(ctx context.Context, local, name string) error {
	key := j.blobKey(name)
	if err := j.withRetry(ctx, func(ctx context.Context, cred string) error {
		return j.a.cp.putBlob(ctx, cred, key, local, j.asg.Token)
	}); err != nil {
		return err
	}
	j.res.Artifacts[name] = key
	return nil
}

// uploadAll uploads files (artifact name → local path) in name order,
// moving the task's percent from lo to hi.
func (j *job) uploadAll(ctx context.Context, files map[string]string, lo, hi float64) error {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	for i, n := range names {
		if err := j.upload(ctx, files[n], n); err != nil {
			return err
		}
		j.t.setPercent(lo + (hi-lo)*float64(i+1)/float64(len(names)))
	}
	return nil
}

// input downloads the artifact of an earlier task, named "<task>/<file>"
// as in Assignment.Inputs, and returns its local path.
func (j *job) input(ctx context.Context, name string) (string, error) {
	key, ok := j.asg.Inputs[name]
	if !ok {
		have := make([]string, 0, len(j.asg.Inputs))
		for n := range j.asg.Inputs {
			have = append(have, n)
		}
		slices.Sort(have)
		return "", fmt.Errorf("%w: input %q is missing (the assignment has %s)", errBadAssignment, name, strings.Join(have, ", "))
	}
	taskName, file, ok := strings.Cut(name, "/")
	if !ok || !safeName(taskName) || !safeName(file) {
		return "", fmt.Errorf("%w: input name %q: want <task>/<file>", errBadAssignment, name)
	}
	local := j.path("in", taskName, file)
	if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
		return "", fmt.Errorf("input %s: %w", name, err)
	}
	err := j.withRetry(ctx, func(ctx context.Context, cred string) error {
		return j.a.cp.getBlob(ctx, cred, key, local)
	})
	if err != nil {
		return "", fmt.Errorf("input %s: %w", name, err)
	}
	return local, nil
}

// safeName reports whether s is one plain file name.
func safeName(s string) bool {
	return s != "" && s != "." && s != ".." && !strings.ContainsAny(s, `/\`) && filepath.IsLocal(s)
}

// loadPlan downloads and decodes plan/plan.json.
func (j *job) loadPlan(ctx context.Context) (pipeline.Plan, error) {
	var plan pipeline.Plan
	path, err := j.input(ctx, scheduler.NamePlan+"/"+PlanFile)
	if err != nil {
		return plan, err
	}
	if err := readJSON(path, &plan); err != nil {
		return plan, fmt.Errorf("%s: %w", PlanFile, err)
	}
	if len(plan.Scenes) == 0 {
		return plan, fmt.Errorf("%w: %s has no scenes", errBadAssignment, PlanFile)
	}
	return plan, nil
}

// runner is what renders for this task: the runner configured for a
// model (a command, a model server's URL, a Cog container), else the
// procedural runner. Command and URL runners are told the GPUs the lease
// holds (gpu_ids; a command also through CUDA_VISIBLE_DEVICES).
func (j *job) runner() pipeline.Runner {
	a := j.a
	r := &pipeline.Router{Default: &pipeline.ProceduralRunner{Tools: a.cfg.Tools}, Models: map[string]pipeline.Runner{}}
	var env, gpus []string
	if !a.capacity.Virtual && len(j.asg.GPUIDs) > 0 {
		gpus = j.asg.GPUIDs
		env = []string{"CUDA_VISIBLE_DEVICES=" + strings.Join(gpus, ",")}
	}
	for _, lr := range a.runners {
		run := j.pipelineRunner(lr, env, gpus)
		for _, model := range lr.spec.Models {
			r.Models[model] = run
		}
	}
	return r
}

// seed derives a render seed in 0..2^31-1 from the video id and an index,
// so that retries of a task on any node render the same clip.
func seed(videoID string, index int) int64 {
	h := fnv.New64a()
	h.Write([]byte(videoID))
	h.Write([]byte{0})
	h.Write([]byte(strconv.Itoa(index)))
	return int64(h.Sum64() & 0x7fffffff)
}

// plan writes the script of an auto video: with the openai-chat runner of
// stage plan when there is one, else the deterministic writer. A language
// model that fails fails the task (the farm retries it); its plan is not
// written by the deterministic writer instead, which would deliver a video
// the operator did not configure.
func (j *job) plan(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	plan, err := j.writePlan(ctx)
	if err != nil {
		return err
	}
	path := j.path(PlanFile)
	if err := writeJSON(path, plan); err != nil {
		return err
	}
	j.t.setPercent(50)
	if err := j.upload(ctx, path, PlanFile); err != nil {
		return err
	}
	j.res.Scenes = len(plan.Scenes)
	return nil
}

// tts speaks every line of the plan: one WAV per line plus lines.json.
func (j *job) tts(ctx context.Context) error {
	plan, err := j.loadPlan(ctx)
	if err != nil {
		return err
	}
	j.t.setPercent(5)
	voice := j.v.VoiceID
	if voice == "" {
		voice = pipeline.DefaultVoice
	}
	out := j.path("out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("tts: %w", err)
	}
	if r := j.a.speechRunner(voice); r != nil {
		var release func()
		if ctx, release, err = r.hold(ctx); err != nil {
			return fmt.Errorf("tts: %w", err)
		}
		defer release()
	}
	lines, err := pipeline.Narrate(ctx, j.a.speaker, plan, voice, out, j.span(5, 80))
	if err != nil {
		return fmt.Errorf("tts: %w", err)
	}
	files := map[string]string{}
	for i := range lines {
		name := filepath.Base(lines[i].Audio)
		files[name] = lines[i].Audio
		lines[i].Audio = name
	}
	linesPath := filepath.Join(out, LinesFile)
	if err := writeJSON(linesPath, lines); err != nil {
		return err
	}
	files[LinesFile] = linesPath
	return j.uploadAll(ctx, files, 80, 99)
}

// sceneIndex is N of a task named "scene-NNNN" (1-based).
func sceneIndex(name string) (int, error) {
	digits, ok := strings.CutPrefix(name, "scene-")
	n, err := strconv.Atoi(digits)
	if !ok || err != nil || n < 1 {
		return 0, fmt.Errorf("%w: scene task name %q: want scene-NNNN, numbered from 1", errBadAssignment, name)
	}
	return n, nil
}

// sceneName is the task name of scene i (1-based), as the scheduler names it.
func sceneName(i int) string { return fmt.Sprintf("scene-%04d", i) }

// scene renders one scene of an auto video.
func (j *job) scene(ctx context.Context) error {
	n, err := sceneIndex(j.asg.Name)
	if err != nil {
		return err
	}
	plan, err := j.loadPlan(ctx)
	if err != nil {
		return err
	}
	if n > len(plan.Scenes) {
		return fmt.Errorf("%w: %s, but the plan has %d scenes", errBadAssignment, j.asg.Name, len(plan.Scenes))
	}
	sc := plan.Scenes[n-1]
	aspect, err := pipeline.OrientationAspect(j.v.Orientation)
	if err != nil {
		return fmt.Errorf("scene: %w", err)
	}
	// The control plane placed the scene for a model (the node advertised it);
	// render with that one. An assignment without one names the catalog's.
	model := j.asg.Model
	if model == "" {
		model = models.AutoSceneModel
	}
	resolution := j.v.Resolution
	if resolution == "" {
		resolution = models.AutoResolution
	}
	clip := j.path("out", ClipFile)
	j.t.setPercent(5)
	req := pipeline.RenderRequest{
		Model:           model,
		Operation:       pipeline.TextToVideo,
		Prompt:          sc.Visual,
		Seed:            seed(j.v.ID, n),
		Resolution:      resolution,
		AspectRatio:     aspect,
		DurationSeconds: float64(sc.DurationSeconds),
		OutputPath:      clip,
		// The composite re-encodes scene clips: encode them fast, at high quality.
		Intermediate: true,
	}
	// The account's file assets are shown as scenes, in turn: scene n
	// animates asset n (cycling when there are fewer assets than scenes).
	if in := j.v.AssetInputs; len(in) > 0 {
		img, err := j.imageInput(ctx, in[(n-1)%len(in)])
		if err != nil {
			return err
		}
		req.Operation, req.InputImages = pipeline.ImageToVideo, []string{img}
	}
	if err := j.runner().Render(ctx, req, j.span(5, 95)); err != nil {
		return fmt.Errorf("scene %d: %w", n, err)
	}
	return j.upload(ctx, clip, ClipFile)
}

// composite builds the finished auto video from the plan, the narration
// and every scene clip.
func (j *job) composite(ctx context.Context) error {
	plan, err := j.loadPlan(ctx)
	if err != nil {
		return err
	}
	linesPath, err := j.input(ctx, scheduler.NameTTS+"/"+LinesFile)
	if err != nil {
		return err
	}
	var lines []pipeline.SpokenLine
	if err := readJSON(linesPath, &lines); err != nil {
		return fmt.Errorf("%s: %w", LinesFile, err)
	}
	steps := float64(len(lines) + len(plan.Scenes))
	done := 0.0
	step := func() { done++; j.t.setPercent(20 * done / steps) }
	for i := range lines {
		name := lines[i].Audio
		if !safeName(name) {
			return fmt.Errorf("%w: %s: audio %q is not a file name", errBadAssignment, LinesFile, name)
		}
		if lines[i].Audio, err = j.input(ctx, scheduler.NameTTS+"/"+name); err != nil {
			return err
		}
		step()
	}
	clips := make([]string, len(plan.Scenes))
	for i := range plan.Scenes {
		if clips[i], err = j.input(ctx, sceneName(i+1)+"/"+ClipFile); err != nil {
			return err
		}
		step()
	}
	avatar, avatarImage, err := j.presenter(ctx)
	if err != nil {
		return err
	}
	brand, err := j.brand(ctx)
	if err != nil {
		return err
	}
	var clip string
	compositeFrom := 20.0
	if r := j.a.stageRunner(StageAvatar); r != nil {
		if clip, err = j.presenterClip(ctx, r, plan, lines, avatar, avatarImage, j.span(20, 50)); err != nil {
			return err
		}
		compositeFrom = 50
	}
	res, err := j.a.cfg.Tools.Composite(ctx, pipeline.CompositeInput{
		Plan:        plan,
		SceneClips:  clips,
		Lines:       lines,
		Orientation: j.v.Orientation,
		Resolution:  j.v.Resolution,
		AvatarID:    avatar,
		AvatarImage: avatarImage,
		AvatarClip:  clip,
		Brand:       brand,
		OutDir:      j.path("out"),
	}, j.span(compositeFrom, 90))
	if err != nil {
		return err
	}
	if brand != nil && len(brand.Fonts) > 0 && res.CaptionFont == "" && len(res.Cues) > 0 {
		j.t.log.Warn("none of the brand kit's fonts is installed on this node (fc-list); captions use the default font",
			"fonts", brand.Fonts)
	}
	info, err := j.a.cfg.Tools.Probe(ctx, res.Video)
	if err != nil {
		return fmt.Errorf("composite: %w", err)
	}
	j.res.DurationSeconds = info.Duration.Seconds()
	return j.uploadAll(ctx, map[string]string{
		wire.ArtifactVideo:           res.Video,
		wire.ArtifactVideoNoCaptions: res.VideoNoCaptions,
		wire.ArtifactCaptionsSRT:     res.SRT,
		wire.ArtifactCaptionsVTT:     res.VTT,
	}, 90, 99)
}

// imageInputs returns the operation of a manual video and its input image
// URLs, in the order the runner wants them.
func imageInputs(v *wire.Video) (string, []string) {
	op := v.Operation
	if op == "" {
		switch {
		case len(v.ImageURLs) > 0:
			op = pipeline.MultipleImages
		case v.FirstFrameURL != "" || v.LastFrameURL != "":
			op = pipeline.FirstLastFrame
		case v.ImageURL != "":
			op = pipeline.ImageToVideo
		default:
			op = pipeline.TextToVideo
		}
	}
	switch op {
	case pipeline.ImageToVideo:
		return op, nonEmpty(v.ImageURL)
	case pipeline.FirstLastFrame:
		return op, nonEmpty(v.FirstFrameURL, v.LastFrameURL)
	case pipeline.MultipleImages:
		return op, nonEmpty(v.ImageURLs...)
	}
	return op, nil
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// render runs the model of a manual video.
func (j *job) render(ctx context.Context) error {
	v := j.v
	op, urls := imageInputs(v)
	var images []string
	for i, u := range urls {
		path, err := j.a.inputs.fetch(ctx, u, j.path(fmt.Sprintf("image-%d", i)))
		if err != nil {
			return err
		}
		images = append(images, path)
		j.t.setPercent(10 * float64(i+1) / float64(len(urls)))
	}
	resolution, aspect, duration := v.Resolution, v.AspectRatio, v.DurationSeconds
	if m, ok := models.Get(v.Model); ok {
		resolution = cmp.Or(resolution, m.DefaultResolution)
		aspect = cmp.Or(aspect, m.DefaultAspectRatio)
		if duration == 0 {
			duration = m.DefaultDuration
		}
	}
	req := pipeline.RenderRequest{
		Model:           v.Model,
		Operation:       op,
		Prompt:          v.Prompt,
		Seed:            seed(v.ID, 0),
		Resolution:      resolution,
		AspectRatio:     aspect,
		DurationSeconds: float64(duration),
		InputImages:     images,
		OutputPath:      j.path("out", ClipFile),
	}
	if v.NegativePrompt != nil {
		req.NegativePrompt = *v.NegativePrompt
	}
	if v.Seed != nil {
		req.Seed = *v.Seed
	}
	if v.Style != nil {
		req.Style = *v.Style
	}
	if v.GenerateAudio != nil {
		req.GenerateAudio = *v.GenerateAudio
	}
	if v.MovementAmplitude != nil {
		req.MovementAmplitude = *v.MovementAmplitude
	}
	if v.CameraFixed != nil {
		req.CameraFixed = *v.CameraFixed
	}
	if v.AutoFix != nil {
		req.AutoFix = *v.AutoFix
	}
	req.CFGScale = v.CfgScale
	if err := j.runner().Render(ctx, req, j.span(10, 95)); err != nil {
		return fmt.Errorf("render: %w", err)
	}
	return j.upload(ctx, req.OutputPath, ClipFile)
}

// finalize turns the render's clip into the delivered video and poster.
func (j *job) finalize(ctx context.Context) error {
	clip, err := j.input(ctx, scheduler.NameRender+"/"+ClipFile)
	if err != nil {
		return err
	}
	j.t.setPercent(10)
	video, poster := j.path("out", wire.ArtifactVideo), j.path("out", wire.ArtifactPoster)
	res, err := j.a.cfg.Tools.Finalize(ctx, clip, video, poster, j.span(10, 90))
	if err != nil {
		return err
	}
	j.res.DurationSeconds = res.Info.Duration.Seconds()
	return j.uploadAll(ctx, map[string]string{wire.ArtifactVideo: video, wire.ArtifactPoster: poster}, 90, 99)
}

func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", filepath.Base(path), err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	return nil
}

func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%w: %w", errBadAssignment, err)
	}
	return nil
}
