package fsm

import (
	"slices"
	"strings"

	"github.com/vidfarm/vidfarm/scheduler"
)

// Routing: tasks go where the voice or stage runner they need is. Voices
// first; stage runners below (runnerReq).
//
// A node offers the voices it registered: its espeak-ng's and
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
// Routing changes what an apply builds, so it starts with StartRouting,
// proposed by the leader once every member understands it; graphs built
// before it, or by an older binary, stay as they were.

// voiceToolPrefix starts the scheduler tool that stands for a voice.
const voiceToolPrefix = "voice:"

func voiceTool(id string) string { return voiceToolPrefix + id }

// IsVoiceTool reports whether a scheduler tool stands for a voice rather
// than an executable: listings of a node's tools leave them out (a node may
// offer thousands of voices; GET /v1/voices lists them).
func IsVoiceTool(tool string) bool { return strings.HasPrefix(tool, voiceToolPrefix) }

// StartRouting switches routing on: from this entry on, every node offers
// its voices to the scheduler, every new tts task requires its voice, and a
// new auto video's plan and composite require their stage runner while a
// node offers one.
type StartRouting struct {
	Now int64 `msgpack:"now"`
}

func (StartRouting) Type() MessageType { return StartRoutingType }

// applyStartRouting answers whether it switched routing on (false: it
// was). The registered nodes get their voices' tools, in id order.
func (s *state) applyStartRouting(*StartRouting) (bool, error) {
	if s.routing {
		return false, nil
	}
	ids := make([]string, 0, len(s.nodes))
	for id := range s.nodes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	// Not UpsertNode: that is a word from the node (a heartbeat), and a node
	// that went silent must stay down.
	for _, id := range ids {
		info, ok := s.sched.Node(id)
		if !ok {
			continue
		}
		if err := s.sched.SetTools(id, withVoiceTools(info.Node.Tools, s.nodes[id].Voices)); err != nil {
			return false, err
		}
	}
	s.routing = true
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

// nodeTools is what a node with tools and voices offers the scheduler.
func (s *state) nodeTools(tools []string, voices []Voice) []string {
	if !s.routing {
		return tools
	}
	return withVoiceTools(tools, voices)
}

// voiceReq returns req requiring voice id instead of the engine, when
// routing is on and the catalogue has the voice.
func (s *state) voiceReq(req scheduler.Requirements, id string, keep ...string) scheduler.Requirements {
	if !s.routing || id == "" {
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
	if !s.routing || s.sched.NodesWithTool(tool) == 0 {
		return req
	}
	req.Tools = append(slices.Clone(req.Tools), tool)
	return req
}

const recRouting recordType = 28

// RoutingOn reports whether tts tasks are routed to their voice's
// nodes (StartRouting).
func (f *FSM) RoutingOn() bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.s.routing
}
