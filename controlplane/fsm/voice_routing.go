package fsm

import (
	"slices"
	"strings"

	"github.com/vidfarm/vidfarm/scheduler"
)

// Voice routing. A node offers the voices it registered: its espeak-ng's and
// those of its speech servers (openai-speech runners). A farm's nodes need
// not offer the same ones, and a voice a node lacks cannot be spoken there
// (the agent answers pipeline.ErrUnknownVoice, and the task fails). So once
// routing is on, the tts task of an auto video and the task of a speech
// sample require their voice, as a scheduler tool named voiceTool(id) that
// a node has for every voice it registered; the scheduler then places them
// only where the voice is. A voice no online node offers any more leaves its
// tasks waiting (no_node_fits, naming the voice), as a model does; they go
// on when a node offering it registers again. A task whose voice was not in
// the catalogue when it was submitted (a farm of virtual nodes lists none,
// and an empty voice means the agent's default espeak-ng voice) keeps the
// requirement it always had.
//
// Routing changes what an apply builds, so it starts with StartVoiceRouting,
// proposed by the leader once every member understands it; graphs built
// before it, or by an older binary, stay as they were.

// voiceToolPrefix starts the scheduler tool that stands for a voice.
const voiceToolPrefix = "voice:"

func voiceTool(id string) string { return voiceToolPrefix + id }

// IsVoiceTool reports whether a scheduler tool stands for a voice rather
// than an executable: listings of a node's tools leave them out (a node may
// offer thousands of voices; GET /v1/voices lists them).
func IsVoiceTool(tool string) bool { return strings.HasPrefix(tool, voiceToolPrefix) }

// StartVoiceRouting switches voice routing on: from this entry on, every
// node offers its voices to the scheduler and every new tts task requires
// its voice.
type StartVoiceRouting struct {
	Now int64 `msgpack:"now"`
}

func (StartVoiceRouting) Type() MessageType { return StartVoiceRoutingType }

// applyStartVoiceRouting answers whether it switched routing on (false: it
// was). The registered nodes get their voices' tools, in id order.
func (s *state) applyStartVoiceRouting(c *StartVoiceRouting) (bool, error) {
	if s.voiceRouting {
		return false, nil
	}
	ids := make([]string, 0, len(s.nodes))
	for id := range s.nodes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	// Every spec is built before any is changed: the scheduler refuses
	// nothing here (voice ids are non-empty), but an apply is all or nothing.
	specs := make([]scheduler.Node, 0, len(ids))
	for _, id := range ids {
		info, ok := s.sched.Node(id)
		if !ok {
			continue
		}
		spec := info.Node
		spec.Tools = withVoiceTools(spec.Tools, s.nodes[id].Voices)
		specs = append(specs, spec)
	}
	for _, spec := range specs {
		if err := s.sched.UpsertNode(spec, timeOf(c.Now)); err != nil {
			return false, err
		}
	}
	s.voiceRouting = true
	return true, nil
}

// withVoiceTools returns tools and a tool for each voice.
func withVoiceTools(tools []string, voices []Voice) []string {
	out := slices.Clip(slices.Clone(tools))
	for _, v := range voices {
		out = append(out, voiceTool(v.ID))
	}
	return out
}

// nodeTools is what a node registering with spec and voices offers the
// scheduler.
func (s *state) nodeTools(spec scheduler.Node, voices []Voice) []string {
	if !s.voiceRouting {
		return spec.Tools
	}
	return withVoiceTools(spec.Tools, voices)
}

// voiceReq returns req requiring voice id instead of the engine, when
// routing is on and the catalogue has the voice.
func (s *state) voiceReq(req scheduler.Requirements, id string, keep ...string) scheduler.Requirements {
	if !s.voiceRouting || id == "" {
		return req
	}
	if _, ok := s.voices.lookup(id); !ok {
		return req
	}
	req.Tools = append([]string{voiceTool(id)}, keep...)
	return req
}

// Stage runners. An agent whose runners file has a healthy planner
// (openai-chat, stage plan) or lip-sync runner (stage avatar) advertises
// the tool wire.ToolPlanner or wire.ToolAvatar. Once routing is on, a new auto
// video's plan task requires the planner, and its composite the lip-sync
// runner, when some registered node offers it at that moment: the operator
// put one in the farm, and a script from the template writer or a still
// presenter is not what the video should get because another node asked
// for work first. Such a task waits while no node offers the runner (as
// a configured planner that fails is not replaced by the template writer on
// the node either); a video made while none is registered is planned and
// composited anywhere, as before.
// runnerReq returns req requiring tool, when routing is on and some
// registered node has it.
func (s *state) runnerReq(req scheduler.Requirements, tool string) scheduler.Requirements {
	if !s.voiceRouting || s.sched.NodesWithTool(tool) == 0 {
		return req
	}
	req.Tools = append(slices.Clone(req.Tools), tool)
	return req
}

// voiceRoutingRecord is routing's snapshot record, present once it is on.
type voiceRoutingRecord struct {
	On bool `msgpack:"on"`
}

const recVoiceRouting recordType = 28

func (s *state) voiceRoutingRecords() []record {
	if !s.voiceRouting {
		return nil
	}
	return []record{{recVoiceRouting, voiceRoutingRecord{On: true}}}
}

func (s *state) restoreVoiceRouting(body []byte) error {
	r, err := decodeRecord[voiceRoutingRecord](body, "voice routing")
	s.voiceRouting = r.On
	return err
}

// VoiceRoutingOn reports whether tts tasks are routed to their voice's
// nodes (StartVoiceRouting).
func (f *FSM) VoiceRoutingOn() bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.s.voiceRouting
}
