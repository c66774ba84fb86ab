package scheduler

import (
	"cmp"
	"slices"
	"time"
)

// State is the scheduler's whole world: videos and their tasks, nodes,
// accounts, leases and the indexes placement needs. It is not safe for
// concurrent use; the FSM applies commands to it one at a time.
//
// Every method is deterministic: the same sequence of calls with the same
// arguments gives the same results on every replica, and on a State
// restored from a Snapshot taken at any point of that sequence.
type State struct {
	cfg Config
	// ranks, during a status batch (statusbatch.go), memoizes account
	// queues' order; nil otherwise.
	ranks rankMemo

	// nextInLine: see SetNextInLine.
	nextInLine bool

	nextToken uint64 // last fencing token handed out
	serveSeq  uint64 // last fair-share service stamp
	videoSeq  uint64 // last video sequence number

	videos   map[string]*video
	ntasks   int // tasks of all videos (found through their video: see task)
	nodes    map[string]*node
	accounts map[string]*account
	// toolNodes counts the registered nodes that have each tool
	// (NodesWithTool); derived from the nodes, never snapshotted.
	toolNodes map[string]int

	classes    []*class
	classByKey map[classKey]*class
	classMemo  [classMemoSize]*class // by requirements' hash (classmemo.go)

	// levels are the non-empty levels, highest priority first: a slice,
	// not a map by priority, as there are a handful and every placement
	// walks them and every task made ready finds its own (levelFor).
	levels []*level
	ready  int // ready tasks: the levels' ready counts summed

	spareLevels []*level     // see spare.go
	spareQueues []*acctQueue // see spare.go

	leaseHeap []leaseEntry // leased tasks ordered by (deadline, token)
	retrying  retryHeap    // tasks waiting to be retried (retry.go)

	gpuIDs      []string // the block gpuIDRoom carves lease GPU id slices from
	spareLeases []*lease // ended leases' records, for newLease

	changedVideos map[Changed]struct{} // nil unless TrackChanges (changes.go)
}

// New returns an empty State with cfg (zero fields take defaults).
func New(cfg Config) (*State, error) {
	cfg, err := cfg.normalized()
	if err != nil {
		return nil, err
	}
	return &State{
		cfg:        cfg,
		videos:     make(map[string]*video),
		nodes:      make(map[string]*node),
		accounts:   make(map[string]*account),
		toolNodes:  make(map[string]int),
		classByKey: make(map[classKey]*class),
	}, nil
}

// Config returns the policy the state applies.
func (s *State) Config() Config { return s.cfg }

// Task returns a copy of the task with the given id.
func (s *State) Task(id string) (Task, bool) {
	t, ok := s.task(id)
	if !ok {
		return Task{}, false
	}
	return t.info(), true
}

// VideoTasks returns copies of a video's tasks in graph order.
func (s *State) VideoTasks(videoID string) ([]Task, error) {
	v, err := s.video(videoID)
	if err != nil {
		return nil, err
	}
	out := make([]Task, len(v.tasks))
	for i, t := range v.tasks {
		out[i] = t.info()
	}
	return out, nil
}

// Leases returns copies of all current leases, by fencing token.
func (s *State) Leases() []Lease {
	out := make([]Lease, 0, len(s.leaseHeap))
	for _, e := range s.leaseHeap {
		out = append(out, e.t.leaseInfo())
	}
	slices.SortFunc(out, func(a, b Lease) int { return cmp.Compare(a.Token, b.Token) })
	return out
}

// Stats counts what the state holds, for metrics and the simulator.
type Stats struct {
	Videos      int `json:"videos"`
	Tasks       int `json:"tasks"`
	ReadyTasks  int `json:"ready_tasks"`
	LeasedTasks int `json:"leased_tasks"`
	// RetryingTasks wait out a backoff after a failure (retry.go).
	RetryingTasks int `json:"retrying_tasks"`
	Nodes         int `json:"nodes"`
	DownNodes     int `json:"down_nodes"`
	Accounts      int `json:"accounts"`
	Classes       int `json:"classes"`
}

// Stats returns counts of what the state holds.
func (s *State) Stats() Stats {
	st := Stats{
		Videos:      len(s.videos),
		Tasks:       s.ntasks,
		LeasedTasks: len(s.leaseHeap),
		Nodes:       len(s.nodes),
		Accounts:    len(s.accounts),
		Classes:     len(s.classes),
	}
	st.ReadyTasks = s.ReadyTasks()
	for _, e := range s.retrying {
		if e.live() {
			st.RetryingTasks++
		}
	}
	for _, n := range s.nodes {
		if n.down {
			st.DownNodes++
		}
	}
	return st
}

// ms converts a time argument to the state's unit, unix milliseconds.
func ms(t time.Time) int64 { return t.UnixMilli() }

// fromMS converts back to a UTC time.Time.
func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

// ReadyTasks counts the tasks waiting for placement, without scanning them
// (the simulator asks after every event).
func (s *State) ReadyTasks() int { return s.ready }
