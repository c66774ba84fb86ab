package wire

import "time"

// History answers the admin API's GET /admin/v1/history?since=<duration>:
// what the farm did in a window, summed up so that its size does not grow
// with the traffic. `vidfarm bench sim --from-farm` turns it into a fleet
// and a workload for the simulator (bench.Twin): the control plane and the
// simulator both import this package and neither imports the other.
type History struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// Classes are the account plans that created videos in the window.
	Classes []HistoryClass `json:"classes"`
	// Arrivals counts the videos created, by what they asked for.
	Arrivals []HistoryArrival `json:"arrivals"`
	// Began is when the farm's state began (its oldest account's creation);
	// zero from a server before it. A window starting before it holds
	// hours in which the farm did not exist.
	Began time.Time `json:"began,omitzero"`
	// Hourly counts the videos created in each hour from From; the last
	// hour may be partial (it ends at To).
	Hourly []int `json:"hourly"`
	// Tasks sums the measured service times (lease granted to completed)
	// of finished tasks, by what the simulator's time model depends on.
	Tasks []HistoryTasks `json:"tasks"`
	// Nodes are the registered nodes, grouped by shape.
	Nodes []HistoryNodes `json:"nodes"`
}

// HistoryClass is one account plan.
type HistoryClass struct {
	Name     string `json:"name"`
	Priority int    `json:"priority"`
	Accounts int    `json:"accounts"` // accounts of the plan that created videos
	Videos   int    `json:"videos"`
}

// HistoryArrival is how many videos of one kind a class created.
type HistoryArrival struct {
	Class           string `json:"class"`
	Mode            string `json:"mode"`
	Model           string `json:"model,omitempty"`
	Resolution      string `json:"resolution,omitempty"`
	DurationSeconds int    `json:"duration_seconds"`
	Count           int    `json:"count"`
}

// HistoryTasks is Count finished tasks of one kind that took Seconds in
// all; DurationSeconds is their video's length.
type HistoryTasks struct {
	Kind            string  `json:"kind"`
	Mode            string  `json:"mode"`
	Model           string  `json:"model,omitempty"`
	Resolution      string  `json:"resolution,omitempty"`
	GPU             string  `json:"gpu,omitempty"` // the GPU kind it ran on; "" for CPU tasks
	DurationSeconds int     `json:"duration_seconds"`
	Count           int     `json:"count"`
	Seconds         float64 `json:"seconds"`
}

// HistoryNodes is Count registered nodes of one shape.
type HistoryNodes struct {
	GPU         string   `json:"gpu,omitempty"` // GPU kind; "" for CPU-only nodes
	GPUs        int      `json:"gpus"`
	GPUMemoryGB float64  `json:"gpu_memory_gb"`
	CPUSlots    int      `json:"cpu_slots"`
	Models      []string `json:"models,omitempty"`
	Count       int      `json:"count"`
}
