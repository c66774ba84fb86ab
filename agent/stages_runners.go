package agent

// The stages that the runners file can give to model servers: plan
// (openai-chat), the narration (openai-speech, through the agent's
// SpeechRouter in tts) and the presenter (avatar: cog or comfyui).

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/vidfarm/vidfarm/pipeline"
)

// writePlan asks the planner of this node for the script.
func (j *job) writePlan(ctx context.Context) (pipeline.Plan, error) {
	r := j.a.stageRunner(StagePlan)
	if r == nil {
		plan, err := pipeline.DeterministicPlanner{}.Plan(ctx, j.v.Prompt, j.v.DurationSeconds)
		if err != nil {
			return plan, fmt.Errorf("plan: %w", err)
		}
		return plan, nil
	}
	ctx, release, err := r.hold(ctx)
	if err != nil {
		return pipeline.Plan{}, fmt.Errorf("plan: %w", err)
	}
	defer release()
	j.t.setPercent(5)
	plan, err := r.planner.Plan(ctx, j.v.Prompt, j.v.DurationSeconds)
	switch {
	case errors.Is(err, pipeline.ErrPlanRejected): // says what the model wrote and what to do
		return plan, fmt.Errorf("plan: runner %s (openai-chat, %s) could not write the script: %w", r.spec.Name, r.spec.Where, err)
	case err != nil:
		return plan, fmt.Errorf("plan: runner %s (openai-chat, %s) could not write the script: %w "+
			"(check that the server runs and serves model %q, and its log; without the runner the built-in writer plans)",
			r.spec.Name, r.spec.Where, err, r.spec.Model)
	}
	return plan, nil
}

// presenterClip makes the lip-synced presenter of a composite with the
// runner of stage avatar (nil: none on this node, "" returned, and the
// still picture presents): the picture (the account's own, image, or the
// stock avatar stockID drawn) and the narration as one track of the
// video's length go to the model; its clip is probed. A runner that fails
// fails the task, as a planner does: the operator asked for a moving
// presenter.
func (j *job) presenterClip(ctx context.Context, r *liveRunner, plan pipeline.Plan, lines []pipeline.SpokenLine,
	stockID, image string, progress pipeline.ProgressFunc) (string, error) {
	tools := j.a.cfg.Tools
	if err := os.MkdirAll(j.path("presenter"), 0o755); err != nil {
		return "", fmt.Errorf("avatar: %w", err)
	}
	portrait := image
	if portrait == "" {
		portrait = j.path("presenter", "portrait.png")
		if err := pipeline.WriteStockAvatar(stockID, portrait); err != nil {
			return "", fmt.Errorf("avatar: %w", err)
		}
	}
	track := j.path("presenter", "narration.wav")
	if err := tools.NarrationTrack(ctx, plan, lines, track); err != nil {
		return "", fmt.Errorf("avatar: %w", err)
	}
	ctx, release, err := r.hold(ctx)
	if err != nil {
		return "", fmt.Errorf("avatar: %w", err)
	}
	defer release()
	clip := j.path("presenter", "presenter.mp4")
	files := map[string]string{FieldAudio: track, FieldPortrait: portrait}
	switch r.spec.Kind {
	case RunnerComfyUI:
		in := pipeline.ComfyInputs{}
		for k, v := range files {
			in[k] = v
		}
		err = r.comfy.Run(ctx, in, clip, progress)
	default:
		cog := &pipeline.CogRunner{URL: r.spec.URL, Client: j.a.cfg.RunnerHTTPClient, Inputs: r.spec.Inputs,
			ID: predictionID(j.asg.TaskID+"/avatar", j.asg.Token)}
		err = cog.Run(ctx, files, clip, progress)
	}
	if err == nil {
		_, err = tools.CheckPresenter(ctx, clip)
	}
	if err != nil {
		return "", fmt.Errorf("avatar: runner %s (%s, %s) could not make the presenter: %w "+
			"(without a runner for stage avatar the still picture presents)", r.spec.Name, r.spec.Kind, r.spec.Where, err)
	}
	return clip, nil
}
