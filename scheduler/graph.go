package scheduler

import (
	"fmt"
	"strings"
)

// Mode is how a video is made.
type Mode string

// Video modes, as in the API.
const (
	ModeManual Mode = "manual"
	ModeAuto   Mode = "auto"
	// ModeJob is one-off media work that is not a video (an avatar portrait,
	// a speech sample): a single task, scheduled and fenced like a video's,
	// under the job's own id.
	ModeJob Mode = "job"
)

// Task names used by the graph builders. Scene tasks are named
// "scene-0001", "scene-0002", ...
const (
	NameRender    = "render"
	NameFinalize  = "finalize"
	NamePlan      = "plan"
	NameTTS       = "tts"
	NameComposite = "composite"
	NameAvatar    = "avatar"
	NameSpeech    = "speech"
)

// VideoInfo identifies a video and who pays for it.
type VideoInfo struct {
	ID        string `json:"id"`
	AccountID string `json:"account_id"`
	// Priority orders work across accounts: higher runs first. Fair share
	// applies among accounts at the same priority.
	Priority int `json:"priority"`
}

// TaskSpec is one task of a Graph.
type TaskSpec struct {
	Name string       `json:"name"` // unique in the graph, no "/"
	Kind Kind         `json:"kind"`
	Req  Requirements `json:"req"`
	Deps []string     `json:"deps,omitempty"` // names of earlier tasks
	// AwaitsScenes makes the task wait, besides its deps, for the scenes
	// that AddScenes adds (auto graphs: the composite).
	AwaitsScenes bool `json:"awaits_scenes,omitempty"`
}

// Graph is a video's task graph as submitted. Build it with ManualGraph or
// AutoGraph and adjust requirements before Submit if needed. Tasks are in
// topological order: a task only depends on tasks listed before it.
type Graph struct {
	Video VideoInfo  `json:"video"`
	Mode  Mode       `json:"mode"`
	Tasks []TaskSpec `json:"tasks"`
}

// DefaultFinalizeReq is what a manual video's finalize task needs.
func DefaultFinalizeReq() Requirements {
	return Requirements{CPUSlots: 1, Tools: []string{"ffmpeg"}}
}

// DefaultPlanReq is what an auto video's plan task needs.
func DefaultPlanReq() Requirements { return Requirements{CPUSlots: 1} }

// DefaultTTSReq is what an auto video's tts task needs.
func DefaultTTSReq() Requirements {
	return Requirements{CPUSlots: 1, Tools: []string{"espeak-ng"}}
}

// DefaultCompositeReq is what an auto video's composite task needs.
func DefaultCompositeReq() Requirements {
	return Requirements{CPUSlots: 2, Tools: []string{"ffmpeg"}}
}

// DefaultAvatarReq is what an avatar job needs: drawing a portrait or
// normalising a photo is one ffmpeg run on a CPU.
func DefaultAvatarReq() Requirements {
	return Requirements{CPUSlots: 1, Tools: []string{"ffmpeg"}}
}

// DefaultSpeechReq is what a speech job needs: espeak-ng speaks, ffmpeg
// encodes.
func DefaultSpeechReq() Requirements {
	return Requirements{CPUSlots: 1, Tools: []string{"espeak-ng", "ffmpeg"}}
}

// AvatarGraph builds the one-task job that makes an account's avatar.
func AvatarGraph(v VideoInfo) Graph {
	return Graph{Video: v, Mode: ModeJob, Tasks: []TaskSpec{{Name: NameAvatar, Kind: KindAvatar, Req: DefaultAvatarReq()}}}
}

// SpeechGraph builds the one-task job that speaks a text sample.
func SpeechGraph(v VideoInfo) Graph {
	return Graph{Video: v, Mode: ModeJob, Tasks: []TaskSpec{{Name: NameSpeech, Kind: KindSpeech, Req: DefaultSpeechReq()}}}
}

// ManualGraph builds render -> finalize. render needs what the model needs
// (GPUs, GPU memory for the resolution, model id); finalize gets
// DefaultFinalizeReq.
func ManualGraph(v VideoInfo, render Requirements) Graph {
	return Graph{
		Video: v,
		Mode:  ModeManual,
		Tasks: []TaskSpec{
			{Name: NameRender, Kind: KindRender, Req: render},
			{Name: NameFinalize, Kind: KindFinalize, Req: DefaultFinalizeReq(), Deps: []string{NameRender}},
		},
	}
}

// AutoGraph builds plan -> tts -> composite, where composite also waits for
// the scenes that AddScenes adds once plan has run (the scene count is only
// known then). Each scene depends on plan; composite on tts and every scene.
func AutoGraph(v VideoInfo) Graph {
	return Graph{
		Video: v,
		Mode:  ModeAuto,
		Tasks: []TaskSpec{
			{Name: NamePlan, Kind: KindPlan, Req: DefaultPlanReq()},
			{Name: NameTTS, Kind: KindTTS, Req: DefaultTTSReq(), Deps: []string{NamePlan}},
			{Name: NameComposite, Kind: KindComposite, Req: DefaultCompositeReq(), Deps: []string{NameTTS}, AwaitsScenes: true},
		},
	}
}

// sceneName is the name of the i-th scene, 1-based.
func sceneName(i int) string {
	if i > 0 && i < len(sceneNames) {
		return sceneNames[i]
	}
	return fmt.Sprintf("scene-%04d", i)
}

// sceneNames holds every scene name AddScenes can give (index 0 unused),
// built once: auto videos add scenes by the million in a busy farm.
var sceneNames = func() []string {
	out := make([]string, MaxScenes+1)
	for i := 1; i <= MaxScenes; i++ {
		out[i] = fmt.Sprintf("scene-%04d", i)
	}
	return out
}()

// Validate checks the graph's shape: ids, names, kinds, requirements,
// topological order, and for auto graphs exactly one plan task and one
// task awaiting scenes.
func (g Graph) Validate() error {
	v := g.Video
	if v.ID == "" || v.AccountID == "" {
		return fmt.Errorf("%w: video id and account id are required", ErrInvalid)
	}
	if g.Mode != ModeManual && g.Mode != ModeAuto && g.Mode != ModeJob {
		return fmt.Errorf("%w: mode must be manual, auto or job, got %q", ErrInvalid, g.Mode)
	}
	if g.Mode == ModeJob && len(g.Tasks) != 1 {
		return fmt.Errorf("%w: a job graph has exactly one task, got %d", ErrInvalid, len(g.Tasks))
	}
	if len(g.Tasks) == 0 || len(g.Tasks) > MaxGraphTasks {
		return fmt.Errorf("%w: a graph needs 1..%d tasks, got %d", ErrInvalid, MaxGraphTasks, len(g.Tasks))
	}
	seen := make(map[string]bool, len(g.Tasks))
	plans, awaits := 0, 0
	for _, ts := range g.Tasks {
		if ts.Name == "" || strings.Contains(ts.Name, "/") || strings.HasPrefix(ts.Name, "scene-") {
			return fmt.Errorf("%w: bad task name %q", ErrInvalid, ts.Name)
		}
		if seen[ts.Name] {
			return fmt.Errorf("%w: duplicate task name %q", ErrInvalid, ts.Name)
		}
		if !ts.Kind.valid() || ts.Kind == KindScene {
			return fmt.Errorf("%w: task %q: kind %q cannot be submitted", ErrInvalid, ts.Name, ts.Kind)
		}
		if err := ts.Req.Validate(); err != nil {
			return fmt.Errorf("task %q: %w", ts.Name, err)
		}
		for _, d := range ts.Deps {
			if !seen[d] {
				return fmt.Errorf("%w: task %q depends on %q, which is not an earlier task", ErrInvalid, ts.Name, d)
			}
		}
		if ts.Kind == KindPlan {
			plans++
		}
		if ts.AwaitsScenes {
			awaits++
		}
		seen[ts.Name] = true
	}
	if g.Mode == ModeAuto && (plans != 1 || awaits != 1) {
		return fmt.Errorf("%w: an auto graph needs exactly one plan task and one task awaiting scenes", ErrInvalid)
	}
	if g.Mode == ModeManual && awaits > 0 {
		return fmt.Errorf("%w: only auto graphs have scenes", ErrInvalid)
	}
	if g.Mode == ModeJob && (awaits > 0 || plans > 0) {
		return fmt.Errorf("%w: a job has no plan and no scenes", ErrInvalid)
	}
	return nil
}
