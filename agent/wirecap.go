package agent

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/vidfarm/vidfarm/pipeline"
	"github.com/vidfarm/vidfarm/scheduler"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

// SchedulerGPUs returns the GPUs of c that can take work, as the scheduler
// counts them: a GPU without MIG is one GPU; a GPU in MIG mode offers each
// of its MIG instances as a GPU of its own (MIG true) and not itself. GPUs
// and instances that carry an Error are left out. Memory is converted from
// NVML's MiB to the decimal gigabytes (10^9 bytes) of the models catalog,
// so an 80 GB H100 (81559 MiB) meets a requirement of 80 GB.
func SchedulerGPUs(c Capacity) []scheduler.GPU {
	var out []scheduler.GPU
	for _, g := range c.GPUs {
		if g.Error != "" || g.UUID == "" {
			continue
		}
		if !g.MIGEnabled {
			out = append(out, scheduler.GPU{ID: g.UUID, MemoryTotalGB: gb(g.MemoryTotalMB), MemoryFreeGB: gb(g.MemoryFreeMB), Model: g.Name})
			continue
		}
		for _, m := range g.MIGInstances {
			if m.Error != "" || m.UUID == "" {
				continue
			}
			out = append(out, scheduler.GPU{ID: m.UUID, MemoryTotalGB: gb(m.MemoryTotalMB), MemoryFreeGB: gb(m.MemoryFreeMB), MIG: true, Model: m.Name})
		}
	}
	return out
}

// gb converts MiB to decimal GB, rounded down to 0.01 GB.
func gb(mib uint64) float64 {
	return math.Floor(float64(mib)*(1<<20)/1e7) / 100
}

// virtualGPUs are n procedural render slots of VirtualGPUMemoryGB each.
func virtualGPUs(n int) []scheduler.GPU {
	out := make([]scheduler.GPU, n)
	for i := range out {
		out[i] = scheduler.GPU{ID: fmt.Sprintf("virtual-%d", i), MemoryTotalGB: VirtualGPUMemoryGB, MemoryFreeGB: VirtualGPUMemoryGB, Model: VirtualGPUModel}
	}
	return out
}

// wireCapacity is what the node registers with: the usable GPUs of c (or,
// when it has none and cfg.Procedural is set, virtual ones), cfg's CPU
// slots and models, and the tools found on PATH.
func wireCapacity(c Capacity, cfg Config) wire.Capacity {
	w := wire.Capacity{
		Hostname: c.Hostname,
		GPUs:     SchedulerGPUs(c),
		CPUSlots: cfg.CPUSlots,
		Tools:    c.InstalledTools(),
		Models:   slices.Clone(cfg.Models),
	}
	if len(w.GPUs) == 0 && cfg.Procedural {
		w.GPUs = virtualGPUs(cfg.VirtualGPUs)
		w.Virtual = true
	}
	if w.GPUs == nil {
		w.GPUs = []scheduler.GPU{}
	}
	if w.Tools == nil {
		w.Tools = []string{}
	}
	return w
}

// voiceListTimeout bounds listing espeak-ng's voices at start.
const voiceListTimeout = 30 * time.Second

// errNoEspeak means discovery found no espeak-ng: the node offers no voices.
var errNoEspeak = errors.New("espeak-ng not found on PATH: this node offers no voices")

// wireVoices lists the voices the node registers with: those of its speech
// servers (the openai-speech runners, in the runners file's order), then
// those of its espeak-ng (tools.ListVoices), in espeak-ng's order, less the
// ids a server took (pipeline.SpeechRouter speaks those with the server).
// Without espeak-ng (discovery, c, did not find it) the list stops after
// the servers' voices with errNoEspeak; when espeak-ng cannot list its
// voices, with that error. Voices the control plane would refuse
// (wire.Voice.Check), later duplicates of an id and those beyond
// wire.MaxVoices are left out and counted in skipped.
func wireVoices(ctx context.Context, tools *pipeline.Tools, servers []pipeline.Voice, c Capacity) (voices []wire.Voice, skipped int, err error) {
	seen := map[string]bool{}
	add := func(list []pipeline.Voice) {
		for _, v := range list {
			w := wire.Voice{ID: v.ID, Name: v.Name, Language: v.Language, Gender: v.Gender}
			if w.Check() != nil || seen[w.ID] || len(voices) == wire.MaxVoices {
				skipped++
				continue
			}
			seen[w.ID] = true
			voices = append(voices, w)
		}
	}
	add(servers)
	if !slices.Contains(c.InstalledTools(), "espeak-ng") {
		return voices, skipped, errNoEspeak
	}
	ctx, cancel := context.WithTimeout(ctx, voiceListTimeout)
	defer cancel()
	list, err := tools.ListVoices(ctx)
	if err != nil {
		return voices, skipped, err
	}
	add(list)
	return voices, skipped, nil
}
