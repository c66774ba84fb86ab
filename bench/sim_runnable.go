package bench

import (
	"fmt"
	"slices"
	"strings"

	"github.com/vidfarm/vidfarm/models"
	"github.com/vidfarm/vidfarm/scheduler"
)

// Runnable inputs. Fleet.Validate and Workload.Validate each check their
// own file; a workload that asks for a model no node group of the fleet
// can run (GPUs with too little memory, too few GPUs on one node, or the
// model left out of every group's models), or for CPU work no node has the
// slots for, passes both. Its videos would wait to the end of the run:
// reported in flight, or, under an SLO whose threshold is longer than the
// run, not reported at all, and the planner would size a farm for a
// workload it is not running. runnable refuses such a pair before anything
// is simulated, and says what the model needs and what the fleet has.

// checkInputs validates the fleet and the workload, then that the fleet
// can run the workload (runnable).
func checkInputs(f Fleet, wl Workload) error {
	if err := f.Validate(); err != nil {
		return err
	}
	if err := wl.Validate(); err != nil {
		return err
	}
	return runnable(f, wl)
}

// runnable checks that every kind of task wl makes fits a node of some
// group of f: each GPU task (the models catalog's GPU count and memory per
// GPU at its resolution, on one node, among the group's models) and each
// CPU stage (its slots on one node). The groups' counts do not matter.
func runnable(f Fleet, wl Workload) error {
	for _, n := range wl.gpuNeeds() {
		if slices.ContainsFunc(f.Groups, n.fits) {
			continue
		}
		have := make([]string, len(f.Groups))
		for i, g := range f.Groups {
			have[i] = n.describe(g)
		}
		if len(have) == 0 {
			have = []string{"no node group"}
		}
		return fieldErr(n.field, "no node group of the fleet can run %s at %s: the models catalog says a render needs %s with at least %d GB each on one node; the fleet has %s",
			n.model, n.res, plural(n.gpus, "GPU"), n.memGB, strings.Join(have, "; "))
	}
	slots := 0
	for _, g := range f.Groups {
		slots = max(slots, g.CPUSlots)
	}
	for _, s := range wl.cpuStages() {
		if s.req.CPUSlots > slots {
			return fieldErr("fleet.groups", "the %s step of every %s video needs %s on one node, and the fleet's nodes have at most %d",
				s.name, s.mode, plural(s.req.CPUSlots, "CPU slot"), slots)
		}
	}
	return nil
}

// plural writes n things: "1 GPU", "4 GPUs".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// gpuNeed is one kind of GPU task of a workload, as the models catalog
// sizes it.
type gpuNeed struct {
	field      string // the workload field that asks for it
	model, res string
	gpus       int // on one node
	memGB      int // on each GPU
}

// gpuNeeds lists the GPU tasks of wl's mixes that it can draw, sized as
// the simulation submits them (gpuReq).
func (w Workload) gpuNeeds() []gpuNeed {
	var out []gpuNeed
	add := func(field, model, res string) {
		m, _ := models.Get(model) // validated: the model and resolution exist
		r := gpuReq(m, res)
		out = append(out, gpuNeed{field: field, model: model, res: res, gpus: r.GPUs, memGB: int(r.GPUMemoryGB)})
	}
	if w.ManualShare > 0 {
		for i, m := range w.Manual {
			add(fmt.Sprintf("workload.manual[%d].model", i), m.Model, m.Resolution)
		}
	}
	if w.ManualShare < 1 && w.Auto != nil {
		add("workload.auto.scene_model", w.Auto.SceneModel, w.Auto.SceneResolution)
	}
	return out
}

// fits reports whether a node of g can run the task: the scheduler's
// placement test (scheduler/capacity.go) on an idle node.
func (n gpuNeed) fits(g NodeGroup) bool {
	return n.servedBy(g) && g.GPUsPerNode >= n.gpus && g.GPUMemoryGB >= float64(n.memGB)
}

// servedBy: g runs the model (a group without a list runs every model).
func (n gpuNeed) servedBy(g NodeGroup) bool {
	return len(g.Models) == 0 || slices.Contains(g.Models, n.model)
}

// describe says what a node of g has, against the task: "a10: 1 × A10
// with 24 GB".
func (n gpuNeed) describe(g NodeGroup) string {
	if g.GPUsPerNode == 0 {
		return g.Name + ": no GPU"
	}
	s := fmt.Sprintf("%s: %d × %s with %g GB", g.Name, g.GPUsPerNode, g.GPUModel, g.GPUMemoryGB)
	if !n.servedBy(g) {
		s += ", " + n.model + " not among its models"
	}
	return s
}

// cpuStage is one CPU task of a video mode.
type cpuStage struct {
	name, mode string
	req        scheduler.Requirements
}

// cpuStages lists the CPU tasks of the modes wl draws, read from the
// scheduler's own graphs, so a stage added there is checked here too.
func (w Workload) cpuStages() []cpuStage {
	var out []cpuStage
	if w.ManualShare > 0 {
		out = append(out, graphCPUStages(scheduler.ManualGraph(scheduler.VideoInfo{}, scheduler.Requirements{}))...)
	}
	if w.ManualShare < 1 {
		out = append(out, graphCPUStages(scheduler.AutoGraph(scheduler.VideoInfo{}))...)
	}
	return out
}

// allCPUStages are the CPU tasks of every mode's graph.
func allCPUStages() []cpuStage {
	return append(graphCPUStages(scheduler.ManualGraph(scheduler.VideoInfo{}, scheduler.Requirements{})),
		graphCPUStages(scheduler.AutoGraph(scheduler.VideoInfo{}))...)
}

// graphCPUStages are g's tasks that take CPU slots and no GPU (a manual
// graph's render, given no requirements here, is not one).
func graphCPUStages(g scheduler.Graph) []cpuStage {
	var out []cpuStage
	for _, t := range g.Tasks {
		if t.Req.GPUs == 0 && t.Req.CPUSlots > 0 {
			out = append(out, cpuStage{t.Name, string(g.Mode), t.Req})
		}
	}
	return out
}
