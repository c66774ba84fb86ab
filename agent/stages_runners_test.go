package agent

import (
	"encoding/json"
	"strings"
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

// TestComfyHealthVRAM: a ComfyUI runner is healthy while /system_stats
// answers and one of its GPUs has gpu_memory_gb in all.
func TestComfyHealthVRAM(t *testing.T) {
	t.Parallel()
	stats := func(devices string) func(*fakes.ComfyUI) {
		return func(c *fakes.ComfyUI) { c.Stats = `{"system": {"os": "posix"}, "devices": [` + devices + `]}` }
	}
	const gpu24 = `{"name": "cuda:0 NVIDIA L4", "type": "cuda", "index": 0, "vram_total": 25769803776, "vram_free": 1000}`
	const gpu80 = `{"name": "cuda:1 NVIDIA H100", "type": "cuda", "index": 1, "vram_total": 85899345920, "vram_free": 1000}`
	const cpu = `{"name": "cpu", "type": "cpu", "index": null, "vram_total": 137438953472, "vram_free": 137438953472}`
	tests := []struct {
		name    string
		devices string
		needGB  float64
		want    string // "" healthy
	}{
		{"fits the larger GPU, though its memory is in use", gpu24 + "," + gpu80, 40, ""},
		{"GPUs are not summed", gpu24 + "," + gpu24, 40, "its largest GPU has 24.0 GB (GET /system_stats), the runner's gpu_memory_gb is 40"},
		{"a CPU is no GPU", cpu, 1, "its largest GPU has 0.0 GB"},
		{"no gpu_memory_gb", cpu, 0, ""},
	}
	wf, err := pipeline.LoadComfyWorkflow("../deploy/runners/comfyui-wan-t2v.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		srv := fakes.NewComfyUI(t, nil, stats(tc.devices))
		h := &comfyHealth{r: &pipeline.ComfyUIRunner{URL: srv.URL(), Workflow: wf}, needGB: tc.needGB}
		err := h.Health(t.Context())
		if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Health = %v, want %q", tc.name, err, tc.want)
		}
	}
}
