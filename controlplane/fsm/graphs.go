package fsm

import (
	"fmt"

	"github.com/vidfarm/vidfarm/models"
	"github.com/vidfarm/vidfarm/scheduler"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

// priority orders work across accounts: Max plans are served before Pro; fair
// share applies within a plan.
func priority(plan string) int {
	if plan == PlanMax {
		return 1
	}
	return 0
}

// modelRequirements is what rendering model at resolution needs from a node.
func modelRequirements(model, resolution string) (scheduler.Requirements, error) {
	gpus, mem, ok, hasRes := models.GPUNeeds(model, resolution)
	switch {
	case !ok:
		return scheduler.Requirements{}, fmt.Errorf("%w: unknown model %q", ErrInvalidCommand, model)
	case !hasRes:
		return scheduler.Requirements{}, fmt.Errorf("%w: %s has no resolution %q", ErrInvalidCommand, model, resolution)
	}
	return scheduler.Requirements{
		GPUs: gpus, GPUMemoryGB: float64(mem), Model: model,
		CPUSlots: 1, Tools: []string{"ffmpeg"},
	}, nil
}

// graph builds the scheduler's task graph of a video.
func (s *state) graph(v *Video, plan string) (scheduler.Graph, error) {
	info := scheduler.VideoInfo{ID: v.ID, AccountID: v.AccountID, Priority: priority(plan)}
	if v.Spec.Mode == ModeAuto {
		g := scheduler.AutoGraph(info)
		for i := range g.Tasks {
			switch t := &g.Tasks[i]; t.Kind {
			case scheduler.KindTTS:
				t.Req = s.voiceReq(t.Req, v.Spec.VoiceID)
			case scheduler.KindPlan:
				t.Req = s.runnerReq(t.Req, wire.ToolPlanner)
			case scheduler.KindComposite:
				t.Req = s.runnerReq(t.Req, wire.ToolAvatar)
			}
		}
		return g, nil
	}
	req, err := modelRequirements(v.Spec.Model, v.Spec.Resolution)
	if err != nil {
		return scheduler.Graph{}, err
	}
	return scheduler.ManualGraph(info, req), nil
}

// submit hands a queued video's graph to the scheduler.
func (s *state) submit(v *Video, plan string, now int64) error {
	g, err := s.graph(v, plan)
	if err != nil {
		return err
	}
	if err := s.sched.Submit(g, timeOf(now)); err != nil {
		return fmt.Errorf("submit video %s: %w", v.ID, err)
	}
	return nil
}
