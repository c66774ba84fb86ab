package agent

import (
	"context"
	"slices"
	"sync"

	"github.com/vidfarm/vidfarm/scheduler/wire"
)

// Runners are part of the node's capacity: the node advertises a model
// only while the runner that renders it passes its health check and fits
// a GPU of the node. When that changes (or a speech server's voices, or a
// stage runner's tool) the agent tells the control plane in place (PUT
// /agent/v1/capacity, scheduler/wire.CapacityUpdate): the node keeps its
// id, its leases and its running tasks. A control plane that does not know
// the route (an older release: 404) or cannot take it yet (mid-upgrade:
// 503) is sent the models alone (PUT /agent/v1/models) where only they
// changed; otherwise the one other way is registering again; a registration under
// the node's name replaces the node and hands its leases back, so then, so
// that no running task is lost, the agent stops leasing, waits until the
// tasks running here have ended, registers with the new models and leases
// again.

// advertised is the capacity to register with now: the node's, less the
// models of runners that are down or do not fit. The models of a runner
// whose health check passes are warm (wire.Capacity.WarmModels) where the
// check says the weights are loaded: a Cog container says READY only once
// its setup, which loads them, has run, so the scheduler may prefer this
// node for them. ComfyUI loads a model when a prompt needs it and does not
// say which it holds: its models are not listed as warm.
//
// The voices of a speech server (openai-speech) that is down are withdrawn
// too: the control plane routes a narration to a node offering its voice,
// and this one cannot speak it now.
func (a *agent) advertised() wire.Capacity {
	c := a.capacity
	out := withdrawn(a.runners)
	c.Models = slices.DeleteFunc(slices.Clone(a.capacity.Models), func(m string) bool { return out[m] })
	mute := map[string]bool{}
	c.Tools = slices.Clone(a.capacity.Tools)
	for _, r := range a.runners {
		if r.speech != nil && !r.isUp() {
			for _, v := range r.spec.Voices {
				mute[v.ID] = true
			}
		}
		for _, st := range stageTools {
			if slices.Contains(r.spec.Stages, st.stage) && r.isUp() && !slices.Contains(c.Tools, st.tool) {
				c.Tools = append(c.Tools, st.tool)
			}
		}
	}
	if len(mute) > 0 {
		c.Voices = slices.DeleteFunc(slices.Clone(a.capacity.Voices), func(v wire.Voice) bool { return mute[v.ID] })
	}
	c.WarmModels = slices.Clone(a.capacity.WarmModels)
	for _, r := range a.runners {
		if !r.warm || !r.isUp() {
			continue
		}
		for _, m := range r.spec.Models {
			if slices.Contains(c.Models, m) {
				c.WarmModels = append(c.WarmModels, m)
			}
		}
	}
	return c
}

// stageTools are the tools a node advertises while a runner of the stage
// is healthy (wire.ToolPlanner, wire.ToolAvatar).
var stageTools = []struct{ stage, tool string }{{StagePlan, wire.ToolPlanner}, {StageAvatar, wire.ToolAvatar}}

// checkRunners runs every health check once, at start, so that the first
// registration advertises only the runners that answer.
func (a *agent) checkRunners(ctx context.Context) {
	var wg sync.WaitGroup
	for _, r := range a.runners {
		if r.health == nil {
			continue
		}
		wg.Go(func() { a.checkRunner(ctx, r, true) })
	}
	wg.Wait()
	for _, r := range a.runners {
		if !r.fits {
			a.log.Warn("runner needs more GPU memory than any GPU of this node has: its models are not advertised",
				"runner", r.spec.Name, "gpu_memory_gb", r.spec.GPUMemoryGB, "models", r.spec.Models)
			continue
		}
		for _, n := range neverPlaced(r.spec.Models, a.capacity.GPUs) {
			a.log.Warn("runner's model needs more GPUs than this node has: the control plane never places it here",
				"runner", r.spec.Name, "from", r.spec.Where, "model", n.model, "needs_gpus", n.gpus,
				"needs_gpu_memory_gb", n.memoryGB, "node_gpus", len(a.capacity.GPUs), "virtual", a.capacity.Virtual)
		}
	}
}

// checkRunner runs one health check of r, logs a change (and the first
// check's failure) and reports whether there was one.
func (a *agent) checkRunner(ctx context.Context, r *liveRunner, first bool) bool {
	changed, fails, err := r.check(ctx)
	if ctx.Err() != nil {
		return false
	}
	switch {
	case err != nil && (changed || first):
		a.log.Warn("runner is not healthy: its models are withdrawn until it is", "runner", r.spec.Name,
			"runner_kind", r.spec.Kind, "models", r.spec.Models, "failed_checks", fails, "err", err)
	case err != nil && r.isUp():
		a.log.Warn("runner health check failed: its models stay advertised until it fails unhealthy_after checks in a row",
			"runner", r.spec.Name, "failed_checks", fails, "unhealthy_after", r.spec.UnhealthyAfter, "err", err)
	case err == nil && changed:
		a.log.Info("runner is healthy: advertising its models", "runner", r.spec.Name, "models", r.spec.Models)
	}
	return changed
}

// watchRunners checks each runner with a health check every
// health_interval until ctx ends, and asks for a new registration when one
// comes up or goes down.
func (a *agent) watchRunners(ctx context.Context, wg *sync.WaitGroup) {
	for _, r := range a.runners {
		if r.health == nil {
			continue
		}
		wg.Go(func() {
			for sleep(ctx, r.spec.HealthInterval) {
				if a.checkRunner(ctx, r, false) {
					select {
					case a.capChanged <- struct{}{}:
					default:
					}
				}
			}
		})
	}
	wg.Go(func() { a.capacityLoop(ctx) })
}

// capacityLoop registers again whenever the advertised models change,
// until ctx ends.
func (a *agent) capacityLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.capChanged:
		}
		if err := a.reregisterCapacity(ctx); refused(err) {
			a.stop(err)
			return
		}
	}
}

// reregisterCapacity registers with the advertised models, voices and
// stage runners' tools if they differ from the registered ones. They go in
// place (PUT /agent/v1/capacity; to a control plane without it, PUT
// /agent/v1/models where only the models changed); what a control plane
// does not take in place, by registering again: it stops leasing, waits for
// the running tasks to end, then registers.
func (a *agent) reregisterCapacity(ctx context.Context) error {
	models, rest := a.capacitySame()
	if models && rest {
		return nil // the warm models follow the models
	}
	if a.updateCapacity(ctx) || (rest && a.updateModels(ctx)) {
		return nil
	}
	a.pauseLeasing()
	defer a.resumeLeasing()
	a.log.Info("the advertised capacity changes: leasing no new work until the running tasks end, then registering again",
		"models_changed", !models, "voices_or_stage_runners_changed", !rest)
	for {
		a.mu.Lock()
		running := len(a.held)
		a.mu.Unlock()
		if running == 0 {
			break
		}
		select {
		case <-a.idle:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if models, rest := a.capacitySame(); models && rest {
		return nil // it changed back meanwhile
	}
	a.regMu.Lock()
	defer a.regMu.Unlock()
	return a.registerLoop(ctx)
}

// updateModels tells the control plane the advertised models in place of
// the registered ones (PUT /agent/v1/models), and reports whether it took
// them.
func (a *agent) updateModels(ctx context.Context) bool {
	return a.updateInPlace(ctx, "models", func(ctx context.Context, cred string, c wire.Capacity) error {
		return a.cp.put(ctx, "/agent/v1/models", cred, wire.ModelsUpdate{Models: c.Models, WarmModels: c.WarmModels})
	}, func(c wire.Capacity) { a.registered.Models, a.registered.WarmModels = c.Models, c.WarmModels })
}

// updateCapacity tells the control plane the advertised models, tools and
// voices in place of the registered ones (PUT /agent/v1/capacity), and
// reports whether it took them.
func (a *agent) updateCapacity(ctx context.Context) bool {
	return a.updateInPlace(ctx, "capacity", func(ctx context.Context, cred string, c wire.Capacity) error {
		return a.cp.put(ctx, "/agent/v1/capacity", cred,
			wire.CapacityUpdate{Models: c.Models, WarmModels: c.WarmModels, Tools: c.Tools, Voices: c.Voices})
	}, func(c wire.Capacity) { a.registered = c })
}

// updateInPlace sends the advertised capacity (send picks what its route
// takes) and, if the control plane took it and the agent has not registered
// again meanwhile, records it as registered (took, under the lock).
func (a *agent) updateInPlace(ctx context.Context, what string, send func(context.Context, string, wire.Capacity) error, took func(wire.Capacity)) bool {
	c := a.advertised()
	a.mu.Lock()
	cred, gen := a.cred, a.gen
	a.mu.Unlock()
	if cred == "" {
		return false
	}
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	err := send(cctx, cred, c)
	cancel()
	if err != nil {
		a.log.Info("the control plane did not take the change in place", "update", what, "err", err)
		return false
	}
	a.mu.Lock()
	if a.gen == gen {
		took(c)
	}
	a.mu.Unlock()
	a.log.Info("advertised capacity updated in place", "update", what, "models", len(c.Models),
		"warm_models", len(c.WarmModels), "tools", len(c.Tools), "voices", len(c.Voices))
	return true
}

// capacitySame reports whether the advertised models, and the voices and
// stage runners' tools, are the registered ones.
func (a *agent) capacitySame() (models, rest bool) {
	c := a.advertised()
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Equal(c.Models, a.registered.Models),
		slices.Equal(c.Voices, a.registered.Voices) && slices.Equal(c.Tools, a.registered.Tools)
}

// pauseLeasing makes workers wait before their next lease request.
func (a *agent) pauseLeasing() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.leaseGate = make(chan struct{})
}

// resumeLeasing lets workers lease again.
func (a *agent) resumeLeasing() {
	a.mu.Lock()
	defer a.mu.Unlock()
	close(a.leaseGate)
}

// waitLeasing waits while leasing is paused; false when the agent stops
// leasing meanwhile.
func (a *agent) waitLeasing() bool {
	a.mu.Lock()
	gate := a.leaseGate
	a.mu.Unlock()
	select {
	case <-gate:
		return true
	case <-a.leaseCtx.Done():
		return false
	}
}

// taskEnded tells a capacity change waiting for an idle node that a task
// ended; a.mu is held.
func (a *agent) taskEnded() {
	if len(a.held) > 0 {
		return
	}
	select {
	case a.idle <- struct{}{}:
	default:
	}
}

// openGate is a closed channel: leasing is not paused.
func openGate() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}
