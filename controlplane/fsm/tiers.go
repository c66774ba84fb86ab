package fsm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"maps"
	"slices"
	"sort"
	"strings"

	"go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// Videos live in two tiers. Memory holds every unfinished video and those
// finished since the last checkpoint, in s.videos and, per account in
// creation order, s.accountVideos. Disk (store.go) holds the videos finished
// before it. Every video has a sequence number, increasing in creation order,
// that orders an account's videos across both tiers.
//
// Every apply must answer the same whichever tier a video is in: replicas
// checkpoint at different moments, so one may hold in memory what another
// has on disk. The functions here are the only way apply and reads reach
// videos that may be finished.

// videoCounts counts an account's videos on disk by tag (see countTags).
type videoCounts map[string]int

// finished reports whether v reached a final status: it goes to the disk tier.
func finished(v *Video) bool {
	return v.Status == StatusCompleted || v.Status == StatusFailed || v.Status == StatusCanceled
}

// addVideo records a new video in memory with the next sequence number.
func (s *state) addVideo(v *Video) {
	s.videoSeq++
	s.videos[v.ID] = v
	s.seqOf[v.ID] = s.videoSeq
	s.accountVideos[v.AccountID] = append(s.accountVideos[v.AccountID], v.ID)
	s.touch(v)
}

// lookupVideo finds a video in either tier. A video read from disk is a copy
// nothing else holds: to change it, call keepVideo first.
func (s *state) lookupVideo(id string) (*Video, uint64, bool) {
	if v, ok := s.videos[id]; ok {
		return v, s.seqOf[id], true
	}
	if s.disk == nil {
		return nil, 0, false
	}
	return s.disk.video(id)
}

// keepVideo holds a video read from disk in memory, where changes to it are
// made, until the next checkpoint writes it back.
func (s *state) keepVideo(v *Video, seq uint64) {
	s.videos[v.ID] = v
	s.seqOf[v.ID] = seq
	s.listedOnDisk[v.ID] = struct{}{}
	s.touch(v)
}

// matches reports whether v is listed or counted under tag (countTags),
// without building the list: it runs for every video in memory on a listing.
func matches(v *Video, tag string) bool {
	if tag == "" {
		return true
	}
	if st, ok := strings.CutPrefix(tag, "s:"); ok {
		return v.Status == st
	}
	if fo, ok := strings.CutPrefix(tag, "f:"); ok {
		return v.Spec.FolderID == fo
	}
	fs, ok := strings.CutPrefix(tag, "fs:")
	return ok && v.Spec.FolderID != "" && fs == v.Spec.FolderID+"|"+v.Status
}

// eachVideo calls fn with the account's videos under tag (listTags), newest
// first when desc, skipping those at or beyond seq bound (0: no bound), until
// fn returns false. It merges the memory tier with the disk tier's list.
func (s *state) eachVideo(account, tag string, desc bool, bound uint64, fn func(v *Video, seq uint64) bool) {
	mem := s.accountVideos[account]
	memAt := func(i int) (*Video, uint64) { id := mem[i]; return s.videos[id], s.seqOf[id] }
	i, step := 0, 1
	if desc {
		i, step = len(mem)-1, -1
	}
	if bound != 0 {
		// mem is in sequence order: start at the bound instead of stepping
		// over every video before it (a big queue, and the event log's
		// search by halves reads from many bounds).
		if desc {
			i = sort.Search(len(mem), func(k int) bool { return s.seqOf[mem[k]] >= bound }) - 1
		} else {
			i = sort.Search(len(mem), func(k int) bool { return s.seqOf[mem[k]] > bound })
		}
	}
	beyond := func(seq uint64) bool { return bound != 0 && ((desc && seq >= bound) || (!desc && seq <= bound)) }
	// nextMem returns the next memory video under tag within the bound.
	nextMem := func() (*Video, uint64, bool) {
		for ; i >= 0 && i < len(mem); i += step {
			v, seq := memAt(i)
			if beyond(seq) || !matches(v, tag) {
				continue
			}
			i += step
			return v, seq, true
		}
		return nil, 0, false
	}
	if s.disk == nil {
		for v, seq, ok := nextMem(); ok; v, seq, ok = nextMem() {
			if !fn(v, seq) {
				return
			}
		}
		return
	}
	err := s.disk.db.View(func(tx *bbolt.Tx) error {
		d := newDiskList(tx, account, tag, desc, bound)
		mv, mseq, mok := nextMem()
		did, dseq, dok := d.next()
		for mok || dok {
			var v *Video
			var seq uint64
			switch {
			case mok && (!dok || (desc && mseq >= dseq) || (!desc && mseq <= dseq)):
				if dok && dseq == mseq { // the same video, written at the last checkpoint
					did, dseq, dok = d.next()
				}
				v, seq = mv, mseq
				mv, mseq, mok = nextMem()
			default:
				v, seq = s.videos[did], dseq // a disk video being changed in memory
				if v == nil {
					v = d.video(did)
				}
				did, dseq, dok = d.next()
			}
			if !fn(v, seq) {
				return nil
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, bolterrors.ErrDatabaseNotOpen) { // not a read racing shutdown
		panic("fsm: list videos of " + account + ": " + err.Error())
	}
}

// diskList walks one list of the disk tier within a read transaction.
type diskList struct {
	tx     *bbolt.Tx
	c      *bbolt.Cursor
	prefix []byte
	desc   bool
	k, v   []byte
	primed bool
	bound  uint64
}

func newDiskList(tx *bbolt.Tx, account, tag string, desc bool, bound uint64) *diskList {
	return &diskList{tx: tx, c: tx.Bucket([]byte(bucketList)).Cursor(), prefix: listPrefix(account, tag), desc: desc, bound: bound}
}

func (d *diskList) next() (string, uint64, bool) {
	switch {
	case d.primed && d.desc:
		d.k, d.v = d.c.Prev()
	case d.primed:
		d.k, d.v = d.c.Next()
	case d.desc:
		start := binary.BigEndian.AppendUint64(slices.Clone(d.prefix), ^uint64(0))
		if d.bound != 0 {
			start = binary.BigEndian.AppendUint64(slices.Clone(d.prefix), d.bound-1)
		}
		d.k, d.v = d.c.Seek(start)
		if d.k == nil || !bytes.Equal(d.k, start) {
			if d.k == nil {
				d.k, d.v = d.c.Last()
			} else {
				d.k, d.v = d.c.Prev()
			}
		}
	default:
		d.k, d.v = d.c.Seek(binary.BigEndian.AppendUint64(slices.Clone(d.prefix), d.bound+1))
	}
	d.primed = true
	if d.k == nil || len(d.k) != len(d.prefix)+8 || !bytes.HasPrefix(d.k, d.prefix) {
		return "", 0, false
	}
	seq := binary.BigEndian.Uint64(d.k[len(d.prefix):])
	if d.desc && d.bound != 0 && seq >= d.bound {
		return "", 0, false
	}
	return string(d.v), seq, true
}

func (d *diskList) video(id string) *Video {
	b := d.tx.Bucket([]byte(bucketVideos)).Get([]byte(id))
	v, _, err := decodeDiskVideo(b)
	if err != nil {
		panic("fsm: video " + id + " listed but unreadable: " + err.Error())
	}
	return v
}

// countVideos is how many of the account's videos are under the count tag.
func (s *state) countVideos(account, tag string) int {
	n := s.diskCounts[account][tag]
	for _, id := range s.accountVideos[account] {
		if matches(s.videos[id], tag) {
			n++
		}
	}
	return n
}

// videosByStatus counts every video by status.
func (s *state) videosByStatus() map[string]int {
	out := map[string]int{}
	for _, v := range s.videos {
		if _, ok := s.listedOnDisk[v.ID]; !ok {
			out[v.Status]++
		}
	}
	for _, c := range s.diskCounts {
		for tag, n := range c {
			if st, ok := strings.CutPrefix(tag, "s:"); ok {
				out[st] += n
			}
		}
	}
	return out
}

// checkpoint is what one checkpoint writes, copied under the lock.
type checkpoint struct {
	index uint64
	// videos are the finished videos that go to the disk tier.
	videos []diskVideo
	counts map[string]videoCounts
	extra  storeExtra
	// hot are the changed records kept one per key (hot.go), as of
	// generation gen of the dirty sets.
	hot []hotWrite
	gen uint64
	// written forget in memory the table records hot holds, once written.
	written []func()
}

// takeCheckpoint copies what changed since the last checkpoint, and what
// the hot stream does not say. The caller holds the lock.
func (s *state) takeCheckpoint(index uint64) (*checkpoint, error) {
	cp := &checkpoint{index: index, counts: make(map[string]videoCounts, len(s.diskCounts)),
		extra: storeExtra{VideoSeq: s.videoSeq}}
	for a, c := range s.diskCounts {
		cp.counts[a] = maps.Clone(c)
	}
	if err := s.takeHot(cp); err != nil {
		return nil, err
	}
	return cp, nil
}

// dropWritten forgets in memory the finished videos cp wrote to disk. A
// video changed since cp was taken (by a sweep) stays in memory to be
// written again.
func (s *state) dropWritten(cp *checkpoint) {
	s.clean(cp.gen)
	for _, forget := range cp.written {
		forget()
	}
	gone := make(map[string]bool, len(cp.videos))
	accounts := map[string]bool{}
	for _, d := range cp.videos {
		id := d.v.ID
		gone[id] = true
		accounts[d.v.AccountID] = true
		_, again := s.dirty.videos[id]
		_, staged := s.dirty.stagedVideos[id]
		switch cur, inMem := s.videos[id]; {
		case !inMem:
			// Another checkpoint of the same index, taken after cp and
			// written before it, wrote the video and let it go already.
		case !again && !staged && cur == d.orig:
			delete(s.videos, id)
			delete(s.seqOf, id)
			delete(s.listedOnDisk, id)
		default:
			s.listedOnDisk[id] = struct{}{}
		}
	}
	for account := range accounts {
		kept := slices.DeleteFunc(s.accountVideos[account], func(id string) bool { return gone[id] })
		if len(kept) == 0 {
			delete(s.accountVideos, account)
		} else {
			s.accountVideos[account] = kept
		}
	}
	s.diskCounts = cp.counts
	// A video held in memory is checked for leftovers where it is; only the
	// others are listed.
	s.diskLeftovers = make(map[string]struct{}, len(cp.extra.Leftovers))
	for _, id := range cp.extra.Leftovers {
		if _, inMem := s.videos[id]; !inMem {
			s.diskLeftovers[id] = struct{}{}
		}
	}
}

// diskVideos expands an accountVideos record by merging its memory copy with
// the disk tier as tx sees it.
func diskVideos(tx *bbolt.Tx) videoSource {
	return func(av accountVideos, emit func(Video) error) error {
		d := newDiskList(tx, av.account, "", false, 0)
		did, dseq, dok := d.next()
		for i := 0; i < len(av.mem) || dok; {
			if i < len(av.mem) && (!dok || av.mem[i].seq <= dseq) {
				if dok && av.mem[i].seq == dseq {
					did, dseq, dok = d.next()
				}
				if err := emit(av.mem[i].v); err != nil {
					return err
				}
				i++
				continue
			}
			v, ok := av.changed[did]
			if !ok {
				v = *d.video(did)
			}
			if err := emit(v); err != nil {
				return err
			}
			did, dseq, dok = d.next()
		}
		return nil
	}
}

// restoreSink takes the finished videos of a snapshot being restored into a
// new store, in batches, so a restore holds only the hot part in memory.
// Without a store it only counts them (checking a backup).
type restoreSink struct {
	st        *store
	pending   []diskVideo
	counts    map[string]videoCounts
	leftovers map[string]struct{}
	n         int
}

const restoreBatch = 20000

func (r *restoreSink) add(v *Video, seq uint64) error {
	r.n++
	if r.st == nil {
		return nil
	}
	if r.counts == nil {
		r.counts, r.leftovers = map[string]videoCounts{}, map[string]struct{}{}
	}
	if v.leftovers() {
		r.leftovers[v.ID] = struct{}{}
	}
	r.pending = append(r.pending, diskVideo{v: v, seq: seq})
	if len(r.pending) >= restoreBatch {
		return r.flush()
	}
	return nil
}

func (r *restoreSink) flush() error {
	if len(r.pending) == 0 {
		return nil
	}
	err := r.st.db.Update(func(tx *bbolt.Tx) error {
		_, err := putVideos(tx, r.pending, r.counts)
		return err
	})
	r.pending = r.pending[:0]
	return err
}

// TierStats says where the videos are held.
type TierStats struct {
	VideosInMemory int
	VideosOnDisk   int
	// StoreBytes is the size of the state file; 0 without one.
	StoreBytes int64
	// TableMemory counts, by kind, the table records held in memory
	// (table.go), deletions not yet written included: with a file, those
	// changed since the last checkpoint and the pending deliveries.
	TableMemory map[string]int
	// Changed counts the records (videos, task graphs, table records)
	// changed since the last checkpoint that the next one must still copy;
	// Staged those already copied for it (stage.go).
	Changed, Staged int
}

// TierStats counts the videos in each tier, for metrics and tests.
func (f *FSM) TierStats() TierStats {
	f.mu.RLock()
	defer f.mu.RUnlock()
	ts := TierStats{VideosInMemory: len(f.s.videos) - len(f.s.listedOnDisk), TableMemory: map[string]int{
		"idempotency": len(f.s.idem.mem), "events": len(f.s.events.mem), "deliveries": len(f.s.deliveries.mem),
		"app_debits": len(f.s.debits.mem), "keyed_grants": len(f.s.grants.mem),
		"keyed_account_creates": len(f.s.accountCreates.mem), "event_log": len(f.s.eventLog.mem),
		"app_ledger": len(f.s.appLedger.mem), "app_events": len(f.s.appEvents.mem),
	}}
	for _, c := range f.s.diskCounts {
		ts.VideosOnDisk += c[""]
	}
	if d := f.s.dirty; d.tracking() {
		ts.Changed = len(d.videos) + len(d.sched) + f.s.sched.ChangedCount()
		ts.Staged = d.staged()
		for _, t := range f.s.tables() {
			ts.Changed += t.dirtyLen()
			ts.Staged += t.stagedLen()
		}
	}
	if f.s.disk != nil {
		_ = f.s.disk.db.View(func(tx *bbolt.Tx) error {
			ts.StoreBytes = tx.Size()
			return nil
		})
	}
	return ts
}
