package agentapi

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/controlplane/ids"
	"github.com/vidfarm/vidfarm/scheduler"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

// CredentialPrefix starts every node credential, so a leaked one is easy to recognise.
const CredentialPrefix = "vfn_"

var credEnc = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// newCredential returns a node credential (256 random bits) and its SHA-256.
func newCredential() (string, [32]byte) {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	c := CredentialPrefix + credEnc.EncodeToString(b[:])
	return c, HashCredential(c)
}

// HashCredential is how credentials are stored. They carry 256 random bits, so a
// fast hash is enough.
func HashCredential(c string) [32]byte { return sha256.Sum256([]byte(c)) }

// Limits on what a node may describe of itself.
const (
	maxNameLen  = 128
	maxGPUs     = 64
	maxListLen  = 1024
	maxCPUSlots = 4096
)

func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	if len(h) < 7 || !strings.EqualFold(h[:7], "Bearer ") {
		return "", false
	}
	tok := strings.TrimSpace(h[7:])
	return tok, tok != ""
}

func (s *server) register(w http.ResponseWriter, r *http.Request) {
	tok, _ := bearer(r)
	if s.cfg.Token == "" {
		apierr.Write(w, r, unauthorized("node registration is disabled: start the control plane with --agent-token"))
		return
	}
	if subtle.ConstantTimeCompare([]byte(tok), []byte(s.cfg.Token)) != 1 {
		apierr.Write(w, r, unauthorized("agent token missing or wrong: send 'Authorization: Bearer <agent token>' (the server's --agent-token)"))
		return
	}
	var req wire.RegisterRequest
	if e := decode(w, r, &req, false); e != nil {
		apierr.Write(w, r, e)
		return
	}
	name := strings.TrimSpace(req.Name)
	if name == "" {
		name = strings.TrimSpace(req.Capacity.Hostname)
	}
	if e := checkCapacity(name, req.Capacity); e != nil {
		apierr.Write(w, r, e)
		return
	}
	select {
	case s.registering <- struct{}{}:
	case <-r.Context().Done():
		return // the agent gave up; it registers again
	}
	if e := s.nameFree(name, r.Header.Get(wire.HeaderPreviousCredential), req.Capacity); e != nil {
		<-s.registering
		apierr.Write(w, r, e)
		return
	}
	nodeID := ids.New("node")
	cred, hash := newCredential()
	info(r).nodeID = nodeID
	c := req.Capacity
	_, err := apply(s, r, &fsm.RegisterNode{
		NodeID: nodeID, Name: name, CredHash: hash, Virtual: c.Virtual, Now: s.cfg.Now().UnixNano(),
		Node:   scheduler.Node{ID: nodeID, GPUs: c.GPUs, CPUSlots: c.CPUSlots, Tools: c.Tools, Models: c.Models, WarmModels: c.WarmModels},
		Voices: fsmVoices(c.Voices),
	})
	<-s.registering
	if err != nil {
		apierr.Write(w, r, s.fromApply(r, err))
		return
	}
	s.notify.Notify()
	s.log.Info("node registered", "node_id", nodeID, "name", name, "gpus", len(c.GPUs), "cpu_slots", c.CPUSlots,
		"virtual", c.Virtual, "models", len(c.Models), "voices", len(c.Voices))
	apierr.WriteJSON(w, http.StatusCreated, wire.RegisterResponse{
		NodeID: nodeID, Credential: cred,
		LeaseSeconds:     max(int(s.cfg.LeaseDuration.Seconds()), 1),
		HeartbeatSeconds: max(int(s.cfg.HeartbeatInterval.Seconds()), 1),
	})
}

// nameFree refuses a registration under the name of a live node (one the
// scheduler has not marked down) unless prev, the credential the agent
// held before, is that node's: an agent registering again, after a restart
// or a 401, replaces its own node, but a second machine given the same
// --name does not take it over; it is refused until the node it would
// replace is down (Config.NodeTimeout after its last heartbeat), so a
// standby takes over from a dead machine by itself. The agent retries a 409.
//
// An agent that lost its credential (a wiped work dir, or an answer to
// its registration that never reached it) would wait that long on its
// own node, so a registration that presents one of the node's GPUs, by
// the UUID NVML gives it, is the same machine: only the machine that
// holds a GPU can report its UUID. It replaces the node once the node
// has been silent for sameMachineSilence, so that a second agent started
// on the same machine under the same name, while the first still
// heartbeats, is refused as before. Virtual GPUs name nothing and do not
// count.
func (s *server) nameFree(name, prev string, c wire.Capacity) *apierr.Error {
	var h [32]byte
	if prev != "" {
		h = HashCredential(prev)
	}
	for _, v := range s.cfg.FSM.Nodes() {
		if v.Node.Name != name || v.Info.Down || (prev != "" && v.Node.CredHash == h) {
			continue
		}
		silent := s.cfg.Now().Sub(v.Info.LastHeartbeat)
		same := !c.Virtual && !v.Node.Virtual && sharesGPU(c.GPUs, v.Info.GPUs)
		if same && silent >= s.sameMachineSilence() {
			continue
		}
		last := v.Info.LastHeartbeat.UTC().Format(time.RFC3339)
		msg := fmt.Sprintf("node %s is registered as %q and is live (last heartbeat %s): give this agent another --name; "+
			"if it is the same machine and its work dir was lost, it may register once that node is down", v.Node.ID, name, last)
		if same {
			msg = fmt.Sprintf("node %s is registered as %q on this machine's GPUs and its agent sent a heartbeat %s ago (%s): "+
				"another agent runs under this name here; stop it, or give this one another --name. "+
				"If that agent is gone, this one registers once the node has been silent for %s",
				v.Node.ID, name, silent.Round(time.Second), last, s.sameMachineSilence())
		}
		e := apierr.New(http.StatusConflict, apierr.CodeNodeNameInUse, msg)
		e.Retryable = true
		return e.With("field", "name").With("node_id", v.Node.ID).With("same_machine", same)
	}
	return nil
}

// sameMachineSilence is how long a node must have sent nothing before an
// agent on the same machine may take its name without its credential:
// three heartbeats missed, which an agent that still runs does not miss.
func (s *server) sameMachineSilence() time.Duration { return 3 * s.cfg.HeartbeatInterval }

// sharesGPU reports whether a and b name a GPU in common.
func sharesGPU(a, b []scheduler.GPU) bool {
	for _, g := range a {
		for _, o := range b {
			if g.ID != "" && g.ID == o.ID {
				return true
			}
		}
	}
	return false
}

// checkCapacity refuses what no scheduler should have to read; the scheduler
// checks the rest (GPU ids, memory).
func checkCapacity(name string, c wire.Capacity) *apierr.Error {
	switch {
	case name == "":
		return invalid("name is required (or capacity.hostname)").With("field", "name")
	case len(name) > maxNameLen || strings.IndexFunc(name, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0:
		return invalid(fmt.Sprintf("name must be at most %d printable characters", maxNameLen)).With("field", "name")
	case len(c.GPUs) > maxGPUs:
		return invalid(fmt.Sprintf("at most %d GPUs per node", maxGPUs)).With("field", "capacity.gpus")
	case c.CPUSlots < 0 || c.CPUSlots > maxCPUSlots:
		return invalid(fmt.Sprintf("cpu_slots must be 0..%d", maxCPUSlots)).With("field", "capacity.cpu_slots")
	case len(c.GPUs) == 0 && c.CPUSlots == 0:
		return invalid("a node must offer GPUs or CPU slots").With("field", "capacity")
	}
	seen := make(map[string]bool, len(c.GPUs))
	for i, g := range c.GPUs {
		field := fmt.Sprintf("capacity.gpus[%d]", i)
		if g.ID == "" || seen[g.ID] {
			return invalid("GPU ids must be unique and non-empty").With("field", field+".id")
		}
		seen[g.ID] = true
		if !(g.MemoryFreeGB >= 0 && g.MemoryFreeGB <= g.MemoryTotalGB && g.MemoryTotalGB <= 1<<20) {
			return invalid("need 0 <= memory_free_gb <= memory_total_gb").With("field", field)
		}
	}
	if e := checkLists(map[string][]string{"capacity.tools": c.Tools, "capacity.models": c.Models, "capacity.warm_models": c.WarmModels}); e != nil {
		return e
	}
	if err := wire.CheckVoices(c.Voices); err != nil {
		return invalid("capacity.voices: "+err.Error()).With("field", "capacity.voices")
	}
	return nil
}

// setModels is PUT /agent/v1/models: the node advertises other models now.
func (s *server) setModels(w http.ResponseWriter, r *http.Request) {
	n := nodeOf(r)
	var req wire.ModelsUpdate
	if e := decode(w, r, &req, false); e != nil {
		apierr.Write(w, r, e)
		return
	}
	if e := checkLists(map[string][]string{"models": req.Models, "warm_models": req.WarmModels}); e != nil {
		apierr.Write(w, r, e)
		return
	}
	s.applyOffer(w, r, &fsm.SetNodeModels{NodeID: n.ID, Models: req.Models, WarmModels: req.WarmModels, Now: s.cfg.Now().UnixNano()},
		"node models updated", "node_id", n.ID, "name", n.Name, "models", len(req.Models), "warm_models", len(req.WarmModels))
}

// setCapacity is PUT /agent/v1/capacity: the node offers other models,
// tools or voices now.
func (s *server) setCapacity(w http.ResponseWriter, r *http.Request) {
	n := nodeOf(r)
	var req wire.CapacityUpdate
	if e := decode(w, r, &req, false); e != nil {
		apierr.Write(w, r, e)
		return
	}
	if e := checkLists(map[string][]string{"models": req.Models, "warm_models": req.WarmModels, "tools": req.Tools}); e != nil {
		apierr.Write(w, r, e)
		return
	}
	if err := wire.CheckVoices(req.Voices); err != nil {
		apierr.Write(w, r, invalid("voices: "+err.Error()).With("field", "voices"))
		return
	}
	s.applyOffer(w, r, &fsm.SetNodeCapacity{NodeID: n.ID, Models: req.Models, WarmModels: req.WarmModels,
		Tools: req.Tools, Voices: fsmVoices(req.Voices), Now: s.cfg.Now().UnixNano()},
		"node capacity updated", "node_id", n.ID, "name", n.Name, "models", len(req.Models),
		"warm_models", len(req.WarmModels), "tools", len(req.Tools), "voices", len(req.Voices))
}

// applyOffer applies a node's changed offer, wakes the lease requests
// waiting for work it may now serve, logs msg and answers 204.
func (s *server) applyOffer(w http.ResponseWriter, r *http.Request, cmd fsm.Typed[fsm.Nothing], msg string, attrs ...any) {
	if _, err := apply(s, r, cmd); err != nil {
		apierr.Write(w, r, s.fromApply(r, err))
		return
	}
	s.notify.Notify()
	s.log.Info(msg, attrs...)
	w.WriteHeader(http.StatusNoContent)
}

// checkLists refuses a list longer than a registration may send, naming
// its field.
func checkLists(lists map[string][]string) *apierr.Error {
	for _, field := range slices.Sorted(maps.Keys(lists)) {
		if len(lists[field]) > maxListLen {
			return invalid(fmt.Sprintf("at most %d entries", maxListLen)).With("field", field)
		}
	}
	return nil
}

// fsmVoices converts the checked voices of a registration.
func fsmVoices(vs []wire.Voice) []fsm.Voice {
	if len(vs) == 0 {
		return nil
	}
	out := make([]fsm.Voice, len(vs))
	for i, v := range vs {
		out[i] = fsm.Voice{ID: v.ID, Name: v.Name, Language: v.Language, Gender: v.Gender}
	}
	return out
}

type nodeKey struct{}

// nodeOf returns the node the request's credential belongs to.
func nodeOf(r *http.Request) fsm.Node {
	n, _ := r.Context().Value(nodeKey{}).(fsm.Node)
	return n
}

// authenticate finds the node by its credential's hash: 401 when there is none.
func (s *server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cred, ok := bearer(r)
		if !ok {
			apierr.Write(w, r, unauthorized("node credential missing: send 'Authorization: Bearer <credential>' as returned by POST /agent/v1/register"))
			return
		}
		n, ok := s.fsm.NodeByCredHash(HashCredential(cred))
		if !ok {
			apierr.Write(w, r, unauthorized("unknown node credential (the node was deregistered or replaced); register again"))
			return
		}
		info(r).nodeID = n.ID
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), nodeKey{}, n)))
	})
}
