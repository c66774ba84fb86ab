package admin

import (
	"fmt"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/controlplane/telemetry"
)

// Node maintenance (fsm/maintenance.go): list the render nodes, cordon,
// drain and uncordon them.
//
//	GET  /admin/v1/nodes                 -> 200 NodeList
//	GET  /admin/v1/nodes/{id}            -> 200 NodeJSON
//	POST /admin/v1/nodes/{id}/cordon     {"reason"}                    -> 200 NodeJSON
//	POST /admin/v1/nodes/{id}/drain      {"timeout_seconds", "reason"} -> 200 NodeJSON
//	POST /admin/v1/nodes/{id}/uncordon                                 -> 200 NodeJSON
//
// {id} is a node id or a node's name (an agent's --name, unique in the farm).
//
// Each GPU carries the agent's last NVML readings (memory used, utilisation,
// temperature, power) and the node when they arrived (telemetry_at): kept
// in the leader's memory (package telemetry), not replicated, so these GETs,
// which a follower forwards to the leader, show them.

// The states NodeJSON.State takes.
const (
	NodeActive   = "active"
	NodeCordoned = fsm.MaintenanceCordoned
	NodeDraining = fsm.MaintenanceDraining
	// NodeDrained is a draining node that runs nothing any more: safe to stop.
	NodeDrained = "drained"
)

// DefaultDrainTimeout is how long a drain lets running tasks finish when the
// request names no timeout; MaxDrainTimeout the longest it accepts.
const (
	DefaultDrainTimeout = 15 * time.Minute
	MaxDrainTimeout     = 7 * 24 * time.Hour
)

// NodeList answers GET /admin/v1/nodes.
type NodeList struct {
	Nodes []NodeJSON `json:"nodes"`
}

// NodeJSON is a render node as an operator sees it.
type NodeJSON struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	State string `json:"state"` // active, cordoned, draining or drained
	// Down: the node stopped heartbeating (scheduler NodeTimeout).
	Down bool `json:"down"`
	// AgentDraining: the agent itself asked for no new work (it is stopping).
	AgentDraining bool `json:"agent_draining,omitempty"`
	// Virtual: the GPUs are procedural render slots on CPU, not hardware.
	Virtual bool          `json:"virtual,omitempty"`
	GPUs    []NodeGPUJSON `json:"gpus"`
	// Models counts the catalog models the node can render; WarmModels are
	// those already loaded or on its disk (placement prefers them); Tools
	// the executables it has (ffmpeg, espeak-ng).
	Models        int           `json:"models"`
	WarmModels    []string      `json:"warm_models"`
	Tools         []string      `json:"tools"`
	CPUSlots      int           `json:"cpu_slots"`
	FreeCPUSlots  int           `json:"free_cpu_slots"`
	RunningTasks  []RunningTask `json:"running_tasks"`
	LastHeartbeat time.Time     `json:"last_heartbeat"`
	RegisteredAt  time.Time     `json:"registered_at"`
	// MaintenanceSince is when the node was cordoned or drained.
	MaintenanceSince *time.Time `json:"maintenance_since,omitempty"`
	// DrainDeadline is when the tasks a draining node still runs are handed back.
	DrainDeadline     *time.Time `json:"drain_deadline,omitempty"`
	MaintenanceReason string     `json:"maintenance_reason,omitempty"`
	// TelemetryAt is when the GPU readings in GPUs arrived with a
	// heartbeat; TelemetryStale says no newer one came for a few heartbeat
	// intervals. Absent when the leader has none (a node of virtual GPUs,
	// an agent without NVML or older than the telemetry), and on a
	// follower: the readings live in the leader's memory only.
	TelemetryAt    *time.Time `json:"telemetry_at,omitempty"`
	TelemetryStale bool       `json:"telemetry_stale,omitempty"`
	// Paused is why the node's agent leases no work now of its own accord
	// (its work dir over its limit), from its heartbeats: the node looks
	// live and idle to the scheduler meanwhile. Leader only, like the
	// telemetry.
	Paused string `json:"paused,omitempty"`
}

// NodeGPUJSON is one GPU of a node.
type NodeGPUJSON struct {
	ID            string  `json:"id"`
	MemoryTotalGB float64 `json:"memory_total_gb"`
	// MemoryFreeGB is what the agent found free when it registered (NVML),
	// what a task may use on it; MIG says it is a MIG slice.
	MemoryFreeGB float64 `json:"memory_free_gb"`
	MIG          bool    `json:"mig,omitempty"`
	Busy         bool    `json:"busy"`
	// Model is the GPU's product name (NVML; a MIG instance's names its
	// profile), "virtual" for a procedural render slot.
	Model string `json:"model,omitempty"`
	// The agent's last NVML readings (NodeJSON.TelemetryAt), each absent
	// where the GPU does not report it: memory in use (a MIG instance's
	// own), utilisation 0..100 and temperature (a MIG instance's parent
	// GPU's), power draw.
	MemoryUsedGB       *float64 `json:"memory_used_gb,omitempty"`
	UtilizationPercent *float64 `json:"utilization_percent,omitempty"`
	TemperatureC       *float64 `json:"temperature_c,omitempty"`
	PowerW             *float64 `json:"power_w,omitempty"`
}

// RunningTask is a lease a node holds.
type RunningTask struct {
	TaskID   string    `json:"task_id"`
	VideoID  string    `json:"video_id"`
	Attempt  int       `json:"attempt"`
	Granted  time.Time `json:"granted_at"`
	Deadline time.Time `json:"lease_deadline"`
	// Task is the task's name in its video's graph (render, finalize,
	// scene-2...), Kind its kind, Model the model it renders (GPU work),
	// GPUIDs the GPUs it holds, Percent its last reported progress.
	Task    string   `json:"task,omitempty"`
	Kind    string   `json:"kind"`
	Model   string   `json:"model,omitempty"`
	GPUIDs  []string `json:"gpu_ids,omitempty"`
	Percent float64  `json:"percent"`
}

func (s *server) nodeRoutes(r chi.Router) {
	r.Get("/admin/v1/nodes", s.listNodes)
	r.Get("/admin/v1/nodes/{id}", s.getNode)
	r.Post("/admin/v1/nodes/{id}/cordon", s.cordonNode)
	r.Post("/admin/v1/nodes/{id}/drain", s.drainNode)
	r.Post("/admin/v1/nodes/{id}/uncordon", s.uncordonNode)
	r.Post("/admin/v1/nodes/{id}/remove", s.removeRenderNode)
}

// RemovedNode answers the removal of a render node.
type RemovedNode struct {
	Removed string `json:"removed"` // its id
	Name    string `json:"name"`
	WasDown bool   `json:"was_down"`
	// Requeued is how many tasks it held: back in the queue, not failed.
	Requeued int `json:"requeued_tasks"`
}

// removeRenderNode forgets a render node for good: one whose machine is
// gone stays down otherwise, and the NodesDown alert with it, since only
// its agent's clean exit removed a node. Its leases go back to the queue
// (DeregisterNode, as that exit). A node that is not down is refused
// without ?force=true: its agent still heartbeats and would register
// again at once.
func (s *server) removeRenderNode(w http.ResponseWriter, r *http.Request) {
	v, ok := s.findNode(w, r)
	if !ok {
		return
	}
	if !v.Info.Down && r.URL.Query().Get("force") != "true" {
		apierr.Write(w, r, apierr.New(http.StatusConflict, apierr.CodeNodeNotDown,
			fmt.Sprintf("render node %s (%s) is not down: its agent still heartbeats and would register again; stop the agent (it removes its node as it exits), or force it (?force=true, vidfarm admin node remove --force)",
				v.Node.Name, v.Node.ID)).With("node_id", v.Node.ID))
		return
	}
	if _, ok := apply(s, w, r, &fsm.DeregisterNode{NodeID: v.Node.ID, Now: s.cfg.Now().UnixNano()}); !ok {
		return
	}
	s.cfg.Logger.Info("render node removed by the operator", "node_id", v.Node.ID, "node_name", v.Node.Name,
		"was_down", v.Info.Down, "requeued_tasks", v.Info.Leases)
	apierr.WriteJSON(w, http.StatusOK, RemovedNode{Removed: v.Node.ID, Name: v.Node.Name, WasDown: v.Info.Down, Requeued: v.Info.Leases})
}

// NodeViews lists the render nodes of f as GET /admin/v1/nodes answers them,
// with the GPU readings of tel (nil: none).
func NodeViews(f *fsm.FSM, tel *telemetry.Store) []NodeJSON {
	views := f.Nodes()
	out := make([]NodeJSON, 0, len(views))
	for _, v := range views {
		out = append(out, NodeView(f, v, tel))
	}
	return out
}

func (s *server) nodeView(v fsm.NodeView) NodeJSON { return NodeView(s.cfg.FSM, v, s.cfg.Telemetry) }

// NodeView is one render node of f as the admin API shows it, with its GPU
// readings in tel (nil: none).
func NodeView(f *fsm.FSM, v fsm.NodeView, tel *telemetry.Store) NodeJSON {
	leases := f.NodeLeases(v.Node.ID)
	out := NodeJSON{
		ID: v.Node.ID, Name: v.Node.Name, State: NodeActive, Down: v.Info.Down, AgentDraining: v.Info.Draining,
		Virtual: v.Node.Virtual, GPUs: []NodeGPUJSON{}, Models: len(v.Info.Models),
		WarmModels: append([]string{}, v.Info.WarmModels...), Tools: executables(v.Info.Tools), CPUSlots: v.Info.CPUSlots, FreeCPUSlots: v.Info.FreeCPUSlots,
		RunningTasks:  make([]RunningTask, 0, len(leases)),
		LastHeartbeat: v.Info.LastHeartbeat.UTC(), RegisteredAt: time.Unix(0, v.Node.RegisteredAt).UTC(),
	}
	idle := map[string]bool{}
	for _, id := range v.Info.IdleGPUs {
		idle[id] = true
	}
	out.Paused = tel.Paused(v.Node.ID)
	sample, sampled := tel.Get(v.Node.ID)
	if sampled {
		at := sample.At.UTC()
		out.TelemetryAt, out.TelemetryStale = &at, sample.Stale
	}
	for _, g := range v.Info.GPUs {
		gj := NodeGPUJSON{ID: g.ID, MemoryTotalGB: g.MemoryTotalGB, MemoryFreeGB: g.MemoryFreeGB, MIG: g.MIG, Busy: !idle[g.ID], Model: g.Model}
		if t, ok := sample.GPUs[g.ID]; ok {
			gj.MemoryUsedGB, gj.UtilizationPercent, gj.TemperatureC, gj.PowerW = &t.MemoryUsedGB, t.UtilizationPercent, t.TemperatureC, t.PowerW
		}
		out.GPUs = append(out.GPUs, gj)
	}
	for _, l := range leases {
		rt := RunningTask{TaskID: l.TaskID, VideoID: l.VideoID, Attempt: l.Attempt,
			Granted: l.GrantedAt.UTC(), Deadline: l.Deadline.UTC(), Kind: string(l.Kind), Model: l.Req.Model, GPUIDs: l.GPUIDs}
		if t, ok := f.Task(l.TaskID); ok {
			rt.Task, rt.Percent = t.Name, t.Percent
		}
		out.RunningTasks = append(out.RunningTasks, rt)
	}
	if m := v.Node.Maintenance; m != nil {
		out.State = m.State
		if m.State == fsm.MaintenanceDraining && len(leases) == 0 {
			out.State = NodeDrained
		}
		since := time.Unix(0, m.Since).UTC()
		out.MaintenanceSince, out.MaintenanceReason = &since, m.Reason
		if m.Deadline != 0 {
			d := time.Unix(0, m.Deadline).UTC()
			out.DrainDeadline = &d
		}
	}
	return out
}

func (s *server) listNodes(w http.ResponseWriter, r *http.Request) {
	apierr.WriteJSON(w, http.StatusOK, NodeList{Nodes: NodeViews(s.cfg.FSM, s.cfg.Telemetry)})
}

// findNode resolves {id}, a node id or name, or answers 404.
func (s *server) findNode(w http.ResponseWriter, r *http.Request) (fsm.NodeView, bool) {
	key := chi.URLParam(r, "id")
	for _, v := range s.cfg.FSM.Nodes() {
		if v.Node.ID == key || v.Node.Name == key {
			return v, true
		}
	}
	apierr.Write(w, r, apierr.New(http.StatusNotFound, apierr.CodeNotFound,
		"no render node with id or name "+key+": `vidfarm admin node list` shows them"))
	return fsm.NodeView{}, false
}

func (s *server) getNode(w http.ResponseWriter, r *http.Request) {
	if v, ok := s.findNode(w, r); ok {
		apierr.WriteJSON(w, http.StatusOK, s.nodeView(v))
	}
}

// maintenanceRequest is the body of cordon and drain, which may be empty.
type maintenanceRequest struct {
	Reason string `json:"reason"`
	// TimeoutSeconds (drain): how long running tasks may go on before they
	// are handed back; absent: DefaultDrainTimeout; 0: at once.
	TimeoutSeconds *float64 `json:"timeout_seconds"`
}

// decodeMaintenance reads an optional maintenanceRequest (decode takes an
// empty body for {}).
func decodeMaintenance(w http.ResponseWriter, r *http.Request) (maintenanceRequest, bool) {
	var req maintenanceRequest
	if !decode(w, r, &req) {
		return req, false
	}
	if e := checkReason(req.Reason); e != nil {
		apierr.Write(w, r, e)
		return req, false
	}
	return req, true
}

// answerNode proposes cmd and answers the node as it now is.
func (s *server) answerNode(w http.ResponseWriter, r *http.Request, cmd fsm.Typed[fsm.Node], id string) {
	if _, ok := apply(s, w, r, cmd); !ok {
		return
	}
	for _, v := range s.cfg.FSM.Nodes() {
		if v.Node.ID == id {
			s.cfg.Logger.Info("node maintenance", "command", cmd.Type().String(), "node_id", id, "node_name", v.Node.Name)
			apierr.WriteJSON(w, http.StatusOK, s.nodeView(v))
			return
		}
	}
	apierr.Write(w, r, apierr.NotFound("node "+id)) // deregistered meanwhile
}

func (s *server) cordonNode(w http.ResponseWriter, r *http.Request) {
	v, ok := s.findNode(w, r)
	if !ok {
		return
	}
	req, ok := decodeMaintenance(w, r)
	if ok {
		s.answerNode(w, r, &fsm.CordonNode{NodeID: v.Node.ID, Reason: req.Reason, Now: s.cfg.Now().UnixNano()}, v.Node.ID)
	}
}

func (s *server) drainNode(w http.ResponseWriter, r *http.Request) {
	v, ok := s.findNode(w, r)
	if !ok {
		return
	}
	req, ok := decodeMaintenance(w, r)
	if !ok {
		return
	}
	timeout := DefaultDrainTimeout
	if t := req.TimeoutSeconds; t != nil {
		if !(*t >= 0 && *t <= MaxDrainTimeout.Seconds()) {
			apierr.Write(w, r, apierr.Invalid("timeout_seconds", "timeout_seconds must be from 0 to 604800 (7 days)"))
			return
		}
		timeout = time.Duration(*t * float64(time.Second))
	}
	now := s.cfg.Now()
	s.answerNode(w, r, &fsm.DrainNode{NodeID: v.Node.ID, Deadline: now.Add(timeout).UnixNano(), Reason: req.Reason,
		Now: now.UnixNano()}, v.Node.ID)
}

func (s *server) uncordonNode(w http.ResponseWriter, r *http.Request) {
	v, ok := s.findNode(w, r)
	if !ok {
		return
	}
	s.answerNode(w, r, &fsm.UncordonNode{NodeID: v.Node.ID, Now: s.cfg.Now().UnixNano()}, v.Node.ID)
}

// executables are a node's tools less those that stand for its voices
// (fsm.IsVoiceTool): thousands of them would hide the executables, and GET
// /v1/voices lists the voices.
func executables(tools []string) []string {
	out := []string{}
	for _, t := range tools {
		if !fsm.IsVoiceTool(t) {
			out = append(out, t)
		}
	}
	return out
}
