package scheduler

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Requirements is what one task needs from the node that runs it. GPUs are
// allocated whole and exclusively: a task needing 2 GPUs of 24 GB gets two
// idle GPUs each offering at least 24 GB. A MIG slice reported as its own
// GPU counts as one GPU, but multi-GPU tasks are only placed on whole
// (non-MIG) GPUs.
//
// Until the models catalog is wired in, callers fill GPUMemoryGB, GPUs and
// Model from their own tables.
type Requirements struct {
	// GPUs is the number of GPUs the task needs (0 for CPU-only tasks).
	GPUs int `json:"gpus"`
	// GPUMemoryGB is the memory the task needs on each of its GPUs.
	GPUMemoryGB float64 `json:"gpu_memory_gb"`
	// Model is the model id the node must support ("" for none).
	Model string `json:"model,omitempty"`
	// CPUSlots is the number of the node's CPU slots the task occupies.
	CPUSlots int `json:"cpu_slots"`
	// Tools lists executables the node must have (e.g. "ffmpeg").
	Tools []string `json:"tools,omitempty"`
}

// Validate reports whether r is well formed.
func (r Requirements) Validate() error {
	switch {
	case r.GPUs < 0 || r.GPUs > 64:
		return fmt.Errorf("%w: gpus must be 0..64, got %d", ErrInvalid, r.GPUs)
	case math.IsNaN(r.GPUMemoryGB) || math.IsInf(r.GPUMemoryGB, 0) || r.GPUMemoryGB < 0:
		return fmt.Errorf("%w: gpu_memory_gb must be a finite number >= 0, got %v", ErrInvalid, r.GPUMemoryGB)
	case r.GPUs == 0 && r.GPUMemoryGB != 0:
		return fmt.Errorf("%w: gpu_memory_gb set on a task that needs no GPU", ErrInvalid)
	case r.CPUSlots < 0 || r.CPUSlots > 1024:
		return fmt.Errorf("%w: cpu_slots must be 0..1024, got %d", ErrInvalid, r.CPUSlots)
	case r.GPUs == 0 && r.CPUSlots == 0:
		return fmt.Errorf("%w: a task must need at least one GPU or one CPU slot", ErrInvalid)
	}
	for _, tool := range r.Tools {
		if tool == "" {
			return fmt.Errorf("%w: empty tool name", ErrInvalid)
		}
	}
	return nil
}

// normalized returns a copy with sorted, de-duplicated tools, so equal
// needs give equal class keys and the caller's slice is never aliased.
func (r Requirements) normalized() Requirements {
	r.Tools = sortedSet(r.Tools)
	return r
}

// key is the canonical text of normalized requirements: tasks with the same
// key form one requirement class and share placement buckets.
func (r Requirements) key() string {
	var b strings.Builder
	b.WriteString(strconv.Itoa(r.GPUs))
	b.WriteByte('|')
	b.WriteString(strconv.FormatFloat(r.GPUMemoryGB, 'g', -1, 64))
	b.WriteByte('|')
	b.WriteString(strconv.Itoa(r.CPUSlots))
	b.WriteByte('|')
	b.WriteString(strconv.Quote(r.Model))
	for _, t := range r.Tools {
		b.WriteByte('|')
		b.WriteString(strconv.Quote(t))
	}
	return b.String()
}

func (r Requirements) clone() Requirements {
	r.Tools = slices.Clone(r.Tools)
	return r
}

// String describes r for people, e.g. "1 GPU x 24 GB, model wan-2.1, 1 CPU slot, tools [ffmpeg]".
func (r Requirements) String() string {
	var parts []string
	if r.GPUs > 0 {
		parts = append(parts, fmt.Sprintf("%d GPU x %s GB", r.GPUs, strconv.FormatFloat(r.GPUMemoryGB, 'g', -1, 64)))
	}
	if r.Model != "" {
		parts = append(parts, "model "+r.Model)
	}
	if r.CPUSlots > 0 {
		parts = append(parts, fmt.Sprintf("%d CPU slot(s)", r.CPUSlots))
	}
	if len(r.Tools) > 0 {
		parts = append(parts, "tools "+strings.Join(r.Tools, ","))
	}
	return strings.Join(parts, ", ")
}

// sortedSet returns a sorted copy of in without duplicates (nil for empty).
func sortedSet(in []string) []string {
	if len(in) == 0 {
		return nil
	}
	out := slices.Clone(in)
	slices.Sort(out)
	return slices.Compact(out)
}
