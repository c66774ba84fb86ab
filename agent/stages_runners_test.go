package agent

import (
	"encoding/json"
	"testing"

	"github.com/vidfarm/vidfarm/internal/fakes"
	"github.com/vidfarm/vidfarm/pipeline"
	"github.com/vidfarm/vidfarm/scheduler"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

// TestPlanWithChatRunner: the openai-chat runner of stage plan writes the
// script; one whose model answers no valid script fails the task saying
// which runner, what it answered and how to fix it, rather than falling
// back to the built-in writer.
func TestPlanWithChatRunner(t *testing.T) {
	t.Parallel()
	const script = `{"title": "Tides", "scenes": [{"narration": "The tide rolls over the sand and pulls back again.",
		"visual": "waves on a sandy beach at noon", "duration_seconds": 5}]}`
	llm := fakes.NewOpenAI(t, &fakes.OpenAI{Model: "qwen", Chat: func(n int, _ fakes.ChatRequest) fakes.OpenAIReply {
		if n == 0 {
			return fakes.OpenAIReply{Content: script}
		}
		return fakes.OpenAIReply{Content: `{"title": "Tides", "scenes": []}`}
	}})
	f := newFakeCP(t)
	cfg := testConfig(t, f)
	cfg.RunnerSpecs = []RunnerSpec{{Name: "planner", Kind: RunnerOpenAIChat, URL: llm.URL() + "/v1", Model: "qwen",
		Stages: []string{StagePlan}, Concurrency: 1, HealthInterval: DefaultRunnerHealthInterval, Where: "runners.yaml:3"}}
	startAgent(t, cfg)

	ok := assignment("vid_llm", "plan", scheduler.KindPlan, wire.Video{Mode: "auto", Prompt: "Tides rise and fall.", DurationSeconds: 5})
	f.enqueue(ok)
	c := waitComplete(t, f, ok.TaskID)
	var plan pipeline.Plan
	if err := json.Unmarshal(f.blob(c.Artifacts[PlanFile]), &plan); err != nil {
		t.Fatal(err)
	}
	if len(plan.Scenes) != 1 || plan.Scenes[0].Visual != "waves on a sandy beach at noon" || c.Scenes != 1 {
		t.Errorf("plan.json = %+v, want the language model's one scene", plan)
	}

	bad := assignment("vid_llm_bad", "plan", scheduler.KindPlan, wire.Video{Mode: "auto", Prompt: "Tides rise and fall.", DurationSeconds: 5})
	f.enqueue(bad)
	expectFailed(t, f, bad.TaskID, `plan: runner planner (openai-chat, runners.yaml:3) could not write the script: `+
		`pipeline: the language model's script was rejected`)
	fr, _ := f.failed(bad.TaskID)
	t.Logf("reason: %s", fr.Reason)
}
