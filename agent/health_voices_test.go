package agent

import (
	"slices"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/internal/fakes"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

// offers reports whether the latest capacity the fake was told, by a
// registration or an update in place, satisfies has, and how many it was
// told in all.
func offers(f *fakeCP, has func(tools []string, voices []wire.Voice) bool) (bool, int) {
	rec := f.snapshot()
	n := len(rec.registrations) + len(rec.capacities)
	// The agent registers once here, then updates in place; or, with a
	// control plane from before the capacity route, only registers.
	switch {
	case len(rec.capacities) > 0:
		c := rec.capacities[len(rec.capacities)-1]
		return has(c.Tools, c.Voices), n
	case len(rec.registrations) > 0:
		c := rec.registrations[len(rec.registrations)-1].Capacity
		return has(c.Tools, c.Voices), n
	}
	return false, 0
}

// A speech server that goes down takes its voices out of what the node
// offers (the control plane then routes those narrations elsewhere, or
// holds them), and they come back with it. The change goes in place, so the
// node keeps leasing; a control plane from before PUT /agent/v1/capacity
// gets a registration instead.
func TestSpeechServerDownWithdrawsItsVoices(t *testing.T) {
	t.Parallel()
	for _, old := range []bool{false, true} {
		t.Run(map[bool]string{false: "in place", true: "older control plane"}[old], func(t *testing.T) {
			t.Parallel()
			f := newFakeCP(t)
			f.NoCapacityRoute = old
			tts := fakes.NewOpenAI(t, &fakes.OpenAI{Model: "kokoro", Voices: []string{"af_bella"}})
			cfg := testConfig(t, f)
			cfg.RunnerSpecs = []RunnerSpec{{Name: "kokoro", Kind: RunnerOpenAISpeech, URL: tts.URL(), Model: "kokoro",
				Stages: []string{StageTTS}, Voices: []wire.Voice{{ID: "af_bella", Name: "Bella", Language: "en-us", Gender: "female"}},
				HealthInterval: 20 * time.Millisecond, UnhealthyAfter: 1, Where: "runners.yaml:2"}}
			startAgent(t, cfg)
			bella := func(_ []string, vs []wire.Voice) bool {
				return slices.ContainsFunc(vs, func(v wire.Voice) bool { return v.ID == "af_bella" })
			}
			voiced := func(n int, want bool) func() bool {
				return func() bool { v, got := offers(f, bella); return got >= n && v == want }
			}
			waitFor(t, "the server's voice offered", voiced(1, true))
			tts.SetDown(true)
			waitFor(t, "the server's voice withdrawn", voiced(2, false))
			tts.SetDown(false)
			waitFor(t, "the server's voice offered again", voiced(3, true))
			rec := f.snapshot()
			if !old && (len(rec.registrations) != 1 || len(rec.capacities) != 2) {
				t.Fatalf("%d registrations, %d updates in place; want 1 and 2", len(rec.registrations), len(rec.capacities))
			}
			if old && (len(rec.registrations) != 3 || rec.inPlace != 0) {
				t.Fatalf("%d registrations, %d updates in place; want 3 and 0 (the models did not change)", len(rec.registrations), rec.inPlace)
			}
		})
	}
}

// A planner that goes down takes the node's wire.ToolPlanner with it (the
// control plane routes auto videos' plans by it), in place, and it comes
// back; the node's executables stay.
func TestPlannerDownWithdrawsItsTool(t *testing.T) {
	t.Parallel()
	f := newFakeCP(t)
	llm := fakes.NewOpenAI(t, &fakes.OpenAI{Model: "qwen"})
	cfg := testConfig(t, f)
	cfg.RunnerSpecs = []RunnerSpec{{Name: "planner", Kind: RunnerOpenAIChat, URL: llm.URL() + "/v1", Model: "qwen",
		Stages: []string{StagePlan}, HealthInterval: 20 * time.Millisecond, UnhealthyAfter: 1, Where: "runners.yaml:2"}}
	startAgent(t, cfg)
	planner := func(n int, want bool) func() bool {
		return func() bool {
			p, got := offers(f, func(tools []string, _ []wire.Voice) bool {
				return slices.Contains(tools, wire.ToolPlanner) && slices.Contains(tools, "ffmpeg")
			})
			return got >= n && p == want
		}
	}
	waitFor(t, "the planner's tool offered", planner(1, true))
	llm.SetDown(true)
	waitFor(t, "the planner's tool withdrawn", planner(2, false))
	llm.SetDown(false)
	waitFor(t, "the planner's tool offered again", planner(3, true))
	if rec := f.snapshot(); len(rec.registrations) != 1 || !slices.Contains(rec.capacities[0].Tools, "ffmpeg") {
		t.Fatalf("%d registrations (want 1), tools while the planner was down %v", len(rec.registrations), rec.capacities[0].Tools)
	}
}
