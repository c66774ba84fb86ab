package agent

import (
	"slices"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/internal/fakes"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

// A speech server that goes down takes its voices out of the node's
// registration (the control plane then routes those narrations elsewhere,
// or holds them), and they come back with it; espeak-ng's stay.
func TestSpeechServerDownWithdrawsItsVoices(t *testing.T) {
	t.Parallel()
	f := newFakeCP(t)
	tts := fakes.NewOpenAI(t, &fakes.OpenAI{Model: "kokoro", Voices: []string{"af_bella"}})
	cfg := testConfig(t, f)
	cfg.RunnerSpecs = []RunnerSpec{{Name: "kokoro", Kind: RunnerOpenAISpeech, URL: tts.URL(), Model: "kokoro",
		Stages: []string{StageTTS}, Voices: []wire.Voice{{ID: "af_bella", Name: "Bella", Language: "en-us", Gender: "female"}},
		HealthInterval: 20 * time.Millisecond, UnhealthyAfter: 1, Where: "runners.yaml:2"}}
	startAgent(t, cfg)
	// voiced reports whether the latest of at least n registrations offers af_bella.
	voiced := func(n int) (bool, bool) {
		regs := f.snapshot().registrations
		if len(regs) < n {
			return false, false
		}
		return slices.ContainsFunc(regs[len(regs)-1].Capacity.Voices, func(v wire.Voice) bool { return v.ID == "af_bella" }), true
	}
	waitFor(t, "a registration with the server's voice", func() bool { v, ok := voiced(1); return ok && v })

	tts.SetDown(true)
	waitFor(t, "a registration without the server's voice", func() bool { v, ok := voiced(2); return ok && !v })
	if rec := f.snapshot(); rec.modelUpdates != 0 {
		t.Errorf("%d in-place model updates: a voice change must register again (the update carries no voices)", rec.modelUpdates)
	}
	tts.SetDown(false)
	waitFor(t, "the server's voice registered again", func() bool { v, ok := voiced(3); return ok && v })
}

// A planner that goes down takes the node's wire.ToolPlanner with it (the
// control plane routes auto videos' plans by it), and it comes back.
func TestPlannerDownWithdrawsItsTool(t *testing.T) {
	t.Parallel()
	f := newFakeCP(t)
	llm := fakes.NewOpenAI(t, &fakes.OpenAI{Model: "qwen"})
	cfg := testConfig(t, f)
	cfg.RunnerSpecs = []RunnerSpec{{Name: "planner", Kind: RunnerOpenAIChat, URL: llm.URL() + "/v1", Model: "qwen",
		Stages: []string{StagePlan}, HealthInterval: 20 * time.Millisecond, UnhealthyAfter: 1, Where: "runners.yaml:2"}}
	startAgent(t, cfg)
	planner := func(n int) (bool, bool) {
		regs := f.snapshot().registrations
		if len(regs) < n {
			return false, false
		}
		return slices.Contains(regs[len(regs)-1].Capacity.Tools, wire.ToolPlanner), true
	}
	waitFor(t, "a registration with the planner's tool", func() bool { p, ok := planner(1); return ok && p })
	if regs := f.snapshot().registrations; !slices.Contains(regs[0].Capacity.Tools, "ffmpeg") {
		t.Fatalf("the registration lost the node's executables: %v", regs[0].Capacity.Tools)
	}
	llm.SetDown(true)
	waitFor(t, "a registration without it", func() bool { p, ok := planner(2); return ok && !p })
	llm.SetDown(false)
	waitFor(t, "the planner's tool registered again", func() bool { p, ok := planner(3); return ok && p })
}
