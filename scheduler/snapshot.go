package scheduler

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// SnapshotVersion is the layout version Snapshot writes and Restore reads.
const SnapshotVersion = 1

// Snapshot is the whole state as plain data: exported fields, slices in a
// fixed order, no pointers shared with the State. Encode it with any codec
// (JSON, msgpack); Restore rebuilds an equivalent State, indexes included.
type Snapshot struct {
	Version   int             `json:"version"`
	Config    Config          `json:"config"`
	NextToken uint64          `json:"next_token"`
	ServeSeq  uint64          `json:"serve_seq"`
	VideoSeq  uint64          `json:"video_seq"`
	Accounts  []AccountRecord `json:"accounts"` // by id
	Nodes     []NodeRecord    `json:"nodes"`    // by id
	Videos    []VideoRecord   `json:"videos"`   // by submission order
}

// AccountRecord is an account's fair-share history.
type AccountRecord struct {
	ID         string `json:"id"`
	LastServed uint64 `json:"last_served"`
}

// NodeRecord is a node as reported, with its last heartbeat, and whether
// it is marked down.
type NodeRecord struct {
	Node Node `json:"node"`
	Down bool `json:"down,omitempty"`
	// Cordoned is omitted when false in msgpack too, so a state without
	// cordoned nodes encodes byte for byte as before the field existed.
	Cordoned bool `json:"cordoned,omitempty" msgpack:",omitempty"`
}

// VideoRecord is a video and its tasks.
type VideoRecord struct {
	Video       VideoInfo    `json:"video"`
	Mode        Mode         `json:"mode"`
	Seq         uint64       `json:"seq"`
	SubmittedAt time.Time    `json:"submitted_at"`
	State       VideoState   `json:"state"`
	ScenesAdded bool         `json:"scenes_added,omitempty"`
	FailedTask  string       `json:"failed_task,omitempty"`
	Failure     string       `json:"failure,omitempty"`
	Tasks       []TaskRecord `json:"tasks"` // graph order
}

// TaskRecord is one task, its history and its lease.
type TaskRecord struct {
	Name         string       `json:"name"`
	Kind         Kind         `json:"kind"`
	Req          Requirements `json:"req"`
	Deps         []string     `json:"deps,omitempty"`
	AwaitsScenes bool         `json:"awaits_scenes,omitempty"`
	State        TaskState    `json:"state"`
	Attempts     int          `json:"attempts"`
	Failures     int          `json:"failures"`
	FailedNodes  []string     `json:"failed_nodes,omitempty"`
	Percent      float64      `json:"percent"`
	ReadyAt      time.Time    `json:"ready_at"`
	Lease        *LeaseRecord `json:"lease,omitempty"`
	DoneNode     string       `json:"done_node,omitempty"`
	DoneToken    uint64       `json:"done_token,omitempty"`
	// Retry is set while the task is TaskRetrying.
	Retry *RetryRecord `json:"retry,omitempty"`
}

// RetryRecord is when a retrying task is ready again and why it failed.
type RetryRecord struct {
	At          time.Time `json:"at"`
	LastFailure string    `json:"last_failure"`
}

// LeaseRecord is a task's current lease.
type LeaseRecord struct {
	NodeID    string    `json:"node_id"`
	Token     uint64    `json:"token"`
	GPUIDs    []string  `json:"gpu_ids,omitempty"`
	GrantedAt time.Time `json:"granted_at"`
	Deadline  time.Time `json:"deadline"`
}

// Snapshot copies the state out as plain data.
func (s *State) Snapshot() Snapshot { return s.snapshot(true) }

func (s *State) snapshot(withVideos bool) Snapshot {
	snap := Snapshot{
		Version:   SnapshotVersion,
		Config:    s.cfg,
		NextToken: s.nextToken,
		ServeSeq:  s.serveSeq,
		VideoSeq:  s.videoSeq,
	}
	for _, a := range s.accounts {
		snap.Accounts = append(snap.Accounts, AccountRecord{ID: a.id, LastServed: a.lastServed})
	}
	slices.SortFunc(snap.Accounts, func(a, b AccountRecord) int { return cmp.Compare(a.ID, b.ID) })
	for _, n := range s.nodes {
		snap.Nodes = append(snap.Nodes, NodeRecord{Node: n.info().Node, Down: n.down, Cordoned: n.cordoned})
	}
	slices.SortFunc(snap.Nodes, func(a, b NodeRecord) int { return cmp.Compare(a.Node.ID, b.Node.ID) })
	if !withVideos {
		return snap
	}
	videos := make([]*video, 0, len(s.videos))
	for _, v := range s.videos {
		videos = append(videos, v)
	}
	slices.SortFunc(videos, func(a, b *video) int { return cmp.Compare(a.seq, b.seq) })
	for _, v := range videos {
		snap.Videos = append(snap.Videos, v.record())
	}
	return snap
}

func (v *video) record() VideoRecord {
	r := VideoRecord{
		Video:       VideoInfo{ID: v.id, AccountID: v.acct.id, Priority: v.prio},
		Mode:        v.mode,
		Seq:         v.seq,
		SubmittedAt: fromMS(v.submitted),
		State:       v.state,
		ScenesAdded: v.scenesAdded,
		FailedTask:  v.failedTask,
		Failure:     v.failure,
	}
	// Sized once: this runs for every video a command changes (the
	// checkpoint's staging), and growing the lists cost twice the room.
	if len(v.tasks) > 0 {
		r.Tasks = make([]TaskRecord, 0, len(v.tasks))
	}
	ndeps := 0
	for _, t := range v.tasks {
		ndeps += len(t.deps)
	}
	deps := make([]string, 0, ndeps)
	for _, t := range v.tasks {
		tr := TaskRecord{
			Name:         t.name(),
			Kind:         t.kind,
			Req:          t.cls.req.clone(),
			AwaitsScenes: t.awaitsScenes(),
			State:        t.state,
			Attempts:     int(t.attempts),
			Percent:      t.percent,
			ReadyAt:      fromMS(t.readyAt),
			DoneNode:     t.doneNode,
			DoneToken:    t.doneToken,
		}
		h := t.past()
		tr.Failures, tr.FailedNodes = h.failures, slices.Clone(h.failedNodes)
		if len(t.deps) > 0 {
			from := len(deps)
			for _, d := range t.deps {
				deps = append(deps, d.name())
			}
			tr.Deps = deps[from:len(deps):len(deps)] // capped: an append by the reader copies
		}
		if t.state == TaskRetrying {
			tr.Retry = &RetryRecord{At: fromMS(t.past().retryAt), LastFailure: t.past().lastFailure}
		}
		if l := t.lease; l != nil {
			tr.Lease = &LeaseRecord{
				NodeID:    l.node.spec.ID,
				Token:     l.token,
				GPUIDs:    l.gpuIDs(),
				GrantedAt: fromMS(l.granted),
				Deadline:  fromMS(l.deadline),
			}
		}
		r.Tasks = append(r.Tasks, tr)
	}
	return r
}

// Clone returns an independent deep copy of the state.
func (s *State) Clone() *State {
	c, err := Restore(s.Snapshot())
	if err != nil {
		panic(fmt.Sprintf("scheduler: a snapshot of a live state does not restore: %v", err))
	}
	return c
}

// Restore rebuilds a State from a snapshot. A snapshot that does not hold
// together (dangling references, duplicate ids, bad records) gives an error
// wrapping ErrInvalid.
func Restore(snap Snapshot) (*State, error) {
	if snap.Version != SnapshotVersion {
		return nil, fmt.Errorf("%w: snapshot version %d, want %d", ErrInvalid, snap.Version, SnapshotVersion)
	}
	s, err := New(snap.Config)
	if err != nil {
		return nil, err
	}
	s.nextToken, s.serveSeq, s.videoSeq = snap.NextToken, snap.ServeSeq, snap.VideoSeq
	for _, a := range snap.Accounts {
		if _, dup := s.accounts[a.ID]; dup || a.ID == "" {
			return nil, fmt.Errorf("%w: snapshot: bad or duplicate account %q", ErrInvalid, a.ID)
		}
		s.accountFor(a.ID).lastServed = a.LastServed
	}
	for _, nr := range snap.Nodes {
		if _, dup := s.nodes[nr.Node.ID]; dup {
			return nil, fmt.Errorf("%w: snapshot: duplicate node %q", ErrInvalid, nr.Node.ID)
		}
		if err := s.UpsertNode(nr.Node, nr.Node.LastHeartbeat); err != nil {
			return nil, fmt.Errorf("snapshot: %w", err)
		}
		s.nodes[nr.Node.ID].down = nr.Down // before any class exists: no counts to fix
		s.nodes[nr.Node.ID].cordoned = nr.Cordoned
	}
	var ready, leased []*task
	var lastSeq uint64
	tokens := make(map[uint64]bool)
	for _, vr := range snap.Videos {
		if vr.Seq <= lastSeq || vr.Seq > s.videoSeq {
			return nil, fmt.Errorf("%w: snapshot: video %q out of order", ErrInvalid, vr.Video.ID)
		}
		lastSeq = vr.Seq
		r, l, err := s.restoreVideo(vr)
		if err != nil {
			return nil, err
		}
		ready, leased = append(ready, r...), append(leased, l...)
	}
	for _, t := range leased {
		if tokens[t.lease.token] {
			return nil, fmt.Errorf("%w: snapshot: fencing token %d used twice", ErrInvalid, t.lease.token)
		}
		tokens[t.lease.token] = true
		if err := s.restoreLease(t, t.lease); err != nil {
			return nil, err
		}
	}
	for _, t := range ready {
		s.makeReady(t, t.readyAt)
	}
	return s, nil
}

// restoreVideo rebuilds one video's records; it returns its ready tasks
// and its leased tasks (with a lease still to install).
func (s *State) restoreVideo(vr VideoRecord) (ready, leased []*task, err error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: snapshot: video %q: %s", ErrInvalid, vr.Video.ID, fmt.Sprintf(format, args...))
	}
	if vr.Video.ID == "" || vr.Video.AccountID == "" || len(vr.Tasks) == 0 {
		return nil, nil, bad("missing ids or tasks")
	}
	if _, dup := s.videos[vr.Video.ID]; dup {
		return nil, nil, bad("duplicate")
	}
	v := &video{
		id:          vr.Video.ID,
		acct:        s.accountFor(vr.Video.AccountID),
		mode:        vr.Mode,
		prio:        vr.Video.Priority,
		seq:         vr.Seq,
		submitted:   ms(vr.SubmittedAt),
		state:       vr.State,
		scenesAdded: vr.ScenesAdded,
		failedTask:  vr.FailedTask,
		failure:     vr.Failure,
	}
	s.videos[v.id] = v
	for _, tr := range vr.Tasks {
		if tr.Kind == KindScene {
			v.scenes++
		}
	}
	byName := make(map[string]*task, len(vr.Tasks))
	sawScene := false
	for _, tr := range vr.Tasks {
		if byName[tr.Name] != nil || !tr.Kind.valid() || tr.Name == "" || strings.Contains(tr.Name, "/") {
			return nil, nil, bad("task %q duplicate, of unknown kind or badly named", tr.Name)
		}
		if err := tr.Req.Validate(); err != nil {
			return nil, nil, bad("task %q: %v", tr.Name, err)
		}
		t := s.newTask(v, taskID(v.id, tr.Name), tr.Kind, tr.Req)
		t.state = tr.State
		if tr.Attempts < 0 || tr.Attempts > math.MaxInt32 {
			return nil, nil, bad("task %q: %d attempts", tr.Name, tr.Attempts)
		}
		t.attempts = int32(tr.Attempts)
		t.doneNode, t.doneToken = tr.DoneNode, tr.DoneToken
		if tr.Failures != 0 || len(tr.FailedNodes) > 0 {
			t.hist = &taskHistory{failures: tr.Failures, failedNodes: slices.Clone(tr.FailedNodes)}
		}
		t.percent = tr.Percent
		t.readyAt = ms(tr.ReadyAt)
		if tr.AwaitsScenes {
			if v.gate != nil {
				return nil, nil, bad("tasks %q and %q both await scenes", v.gate.name(), tr.Name)
			}
			v.gate = t
			if !v.scenesAdded {
				t.pending++
			}
		}
		if tr.Kind == KindPlan {
			v.plan = t
		}
		if tr.Kind == KindScene && !sawScene {
			v.sceneBase, sawScene = len(v.tasks)-1, true
		}
		byName[tr.Name] = t
	}
	for i, tr := range vr.Tasks { // deps may point forward: the composite waits for scenes added after it
		t := v.tasks[i]
		for _, d := range tr.Deps {
			dep := byName[d]
			if dep == nil || dep == t {
				return nil, nil, bad("task %q depends on unknown task %q", tr.Name, d)
			}
			link(dep, t)
		}
	}
	for i, tr := range vr.Tasks {
		t := v.tasks[i]
		switch t.state {
		case TaskDone:
			v.done++
		case TaskReady:
			if t.pending != 0 {
				return nil, nil, bad("task %q is ready with unfinished dependencies", tr.Name)
			}
			ready = append(ready, t)
		case TaskLeased:
			if tr.Lease == nil || tr.Lease.Token == 0 || tr.Lease.Token > s.nextToken {
				return nil, nil, bad("task %q is leased without a valid lease", tr.Name)
			}
			lr := tr.Lease
			t.lease = &lease{token: lr.Token, gpus: slices.Clone(lr.GPUIDs), granted: ms(lr.GrantedAt), deadline: ms(lr.Deadline)}
			t.lease.node = &node{spec: Node{ID: lr.NodeID}} // placeholder, resolved by restoreLease
			leased = append(leased, t)
		case TaskRetrying:
			if t.pending != 0 || tr.Retry == nil {
				return nil, nil, bad("task %q is retrying with unfinished dependencies or no retry time", tr.Name)
			}
			s.hold(t, ms(tr.Retry.At), tr.Retry.LastFailure)
		case TaskBlocked, TaskFailed, TaskCanceled:
		default:
			return nil, nil, bad("task %q has unknown state %q", tr.Name, t.state)
		}
	}
	if v.mode == ModeAuto && (v.plan == nil || v.gate == nil) {
		return nil, nil, bad("auto video without plan or composite")
	}
	return ready, leased, nil
}

// restoreLease installs a leased task's lease on its node.
func (s *State) restoreLease(t *task, l *lease) error {
	n, ok := s.nodes[l.node.spec.ID]
	if !ok {
		return fmt.Errorf("%w: snapshot: task %s leased to unknown node %q", ErrInvalid, t.id, l.node.spec.ID)
	}
	l.node = n
	for _, id := range l.gpus {
		if g := n.gpu(id); g != nil {
			if g.busy != nil {
				return fmt.Errorf("%w: snapshot: GPU %s of node %s leased twice", ErrInvalid, id, n.spec.ID)
			}
			g.busy = t
		}
	}
	n.usedCPU += t.cls.req.CPUSlots
	l.nIdx = int32(len(n.leased))
	n.leased = append(n.leased, t)
	s.pushLease(t)
	t.v.acct.running++
	return nil
}
