package scheduler

import (
	"fmt"
	"time"
)

// Submit adds a video's task graph as of now. Tasks without dependencies
// become ready at once. It is PrepareSubmit and SubmitPrepared in one.
func (s *State) Submit(g Graph, now time.Time) error {
	p, err := PrepareSubmit(g)
	if err != nil {
		return err
	}
	return s.SubmitPrepared(p, now)
}

// Prepared is a video's graph, checked and built into the scheduler's
// records, waiting for SubmitPrepared to enter it into a State.
type Prepared struct {
	g      Graph
	v      *video   // nil once submitted
	hashes []uint64 // reqHash of each task's requirements
}

// PrepareSubmit checks g and builds its records without touching any
// State, so that a driver may prepare videos on other goroutines while
// one goroutine drives the State (the farm simulator does). The graph must
// not change until SubmitPrepared.
func PrepareSubmit(g Graph) (*Prepared, error) {
	if err := g.Validate(); err != nil {
		return nil, err
	}
	if g.Video.Priority < -MaxPriority || g.Video.Priority > MaxPriority {
		return nil, fmt.Errorf("%w: priority must be within +-%d", ErrInvalid, MaxPriority)
	}
	v := &video{id: g.Video.ID, mode: g.Mode, prio: g.Video.Priority, state: VideoQueued}
	n := len(g.Tasks)
	v.slab = make([]task, n) // a video's tasks live and die together: one allocation
	ndeps := 0
	for _, ts := range g.Tasks {
		ndeps += len(ts.Deps)
	}
	// The task list, every task's deps and every task's dependents are
	// carved from one array: a queued video's objects are what each garbage
	// collection marks, for the whole queue (BenchmarkQueueMark). Each part
	// is capped, so a later append (AddScenes) copies rather than overruns.
	room := make([]*task, n+2*ndeps)
	v.tasks = room[:0:n]
	deps, after := room[n:n+ndeps], room[n+ndeps:]
	var counted [16]int // dependents per task, on the stack for most graphs
	dependents := counted[:0]
	if n > len(counted) {
		dependents = make([]int, 0, n)
	}
	ids := taskIDs(v.id, n, func(i int) string { return g.Tasks[i].Name })
	for i, ts := range g.Tasks {
		t := v.alloc()
		*t = task{
			id:    ids[i],
			v:     v,
			idx:   int32(len(v.tasks)),
			kind:  ts.Kind,
			state: TaskBlocked,
			lIdx:  -1,
		}
		v.tasks = append(v.tasks, t)
		dependents = append(dependents, 0)
		for _, d := range ts.Deps {
			dependents[v.taskNamed(d).idx]++ // Validate: an earlier task
		}
		if ts.AwaitsScenes {
			t.pending++
			v.gate = t
		}
		if ts.Kind == KindPlan {
			v.plan = t
		}
	}
	// With each list's room carved to its size, link fills them in place.
	for i, t := range v.tasks {
		t.deps, deps = deps[:0:len(g.Tasks[i].Deps)], deps[len(g.Tasks[i].Deps):]
		t.after, after = after[:0:dependents[i]], after[dependents[i]:]
	}
	for i, t := range v.tasks {
		for _, d := range g.Tasks[i].Deps {
			link(v.taskNamed(d), t)
		}
	}
	hashes := make([]uint64, len(g.Tasks))
	for i := range g.Tasks {
		hashes[i] = reqHash(&g.Tasks[i].Req)
	}
	return &Prepared{g: g, v: v, hashes: hashes}, nil
}

// SubmitPrepared adds a prepared video to s as of now, as Submit would
// have added its graph. A Prepared is entered once, into one State.
func (s *State) SubmitPrepared(p *Prepared, now time.Time) error {
	return s.SubmitPreparedFor(p, AccountRef{}, now)
}

// AccountID is the prepared video's account.
func (p *Prepared) AccountID() string { return p.g.Video.AccountID }

// AccountRef names an account for SubmitPreparedFor without a lookup by id
// on every submission. Accounts are never dropped, so it stays good for
// the State that made it.
type AccountRef struct {
	a     *account
	state *State
}

// AccountRef returns the handle of account id, registering the account
// as its first submission would.
func (s *State) AccountRef(id string) AccountRef {
	return AccountRef{a: s.accountFor(id), state: s}
}

// SubmitPreparedFor is SubmitPrepared with the video's account named by
// acct; a zero AccountRef, one of another State or of another account is
// looked up by the video's account id instead.
func (s *State) SubmitPreparedFor(p *Prepared, acct AccountRef, now time.Time) error {
	if p == nil || p.v == nil {
		return fmt.Errorf("%w: the prepared video was already submitted", ErrInvalid)
	}
	v := p.v
	if _, ok := s.videos[v.id]; ok {
		return fmt.Errorf("%w: video %q", ErrDuplicate, v.id)
	}
	// No task id can be taken when the video id is free: a task id is its
	// video's id, "/" and a name without "/" (Restore holds snapshots to
	// that too), so it names one video.
	p.v = nil
	at := ms(now)
	s.videoSeq++
	v.seq, v.submitted = s.videoSeq, at
	if a := acct.a; acct.state == s && a.id == p.g.Video.AccountID {
		v.acct = a
	} else {
		v.acct = s.accountFor(p.g.Video.AccountID)
	}
	for i, t := range v.tasks {
		t.sub, t.seq = at, v.seq
		t.cls = s.classHashed(&p.g.Tasks[i].Req, p.hashes[i])
	}
	s.ntasks += len(v.tasks)
	s.videos[v.id] = v
	s.changed(v)
	for _, t := range v.tasks {
		if t.pending == 0 {
			s.makeReady(t, at)
		}
	}
	return nil
}
