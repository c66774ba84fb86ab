package bench

// videoTable holds the simulator's unfinished videos by number. Numbers
// are handed out in arrival order and most videos finish within minutes,
// so the unfinished ones fill a window from the oldest to the newest
// number: a slice of that window, indexed by number, replaces a map whose
// hashing, growth and deletes cost a lookup on every lease and completion.
type videoTable struct {
	base uint64      // the number of vs[0]
	vs   []*simVideo // nil where a video finished
	n    int         // non-nil entries
}

// put adds v as number num, which is above every number put before.
func (t *videoTable) put(num uint64, v *simVideo) {
	if len(t.vs) == 0 {
		t.base = num
	}
	for uint64(len(t.vs)) < num-t.base {
		t.vs = append(t.vs, nil) // a number never put (none in a run)
	}
	t.vs = append(t.vs, v)
	t.n++
}

// get returns video num, nil when unknown or finished.
func (t *videoTable) get(num uint64) *simVideo {
	if num < t.base || num-t.base >= uint64(len(t.vs)) {
		return nil
	}
	return t.vs[num-t.base]
}

// drop forgets video num and moves the window past the finished videos at
// its start: the dropped prefix is left behind when append next copies
// the slice.
func (t *videoTable) drop(num uint64) {
	if t.get(num) == nil {
		return
	}
	t.vs[num-t.base] = nil
	t.n--
	i := 0
	for i < len(t.vs) && t.vs[i] == nil {
		i++
	}
	t.vs = t.vs[i:]
	t.base += uint64(i)
}

func (t *videoTable) len() int { return t.n }

// all returns the unfinished videos in number order.
func (t *videoTable) all() []*simVideo {
	out := make([]*simVideo, 0, t.n)
	for _, v := range t.vs {
		if v != nil {
			out = append(out, v)
		}
	}
	return out
}
