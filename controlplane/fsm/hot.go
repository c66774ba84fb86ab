package fsm

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"

	"github.com/vidfarm/vidfarm/scheduler"
	"github.com/vmihailenco/msgpack/v5"
	"go.etcd.io/bbolt"
)

// The hot part of the state grows with the queue, not with history, but a
// queue can hold hundreds of thousands of videos, and a checkpoint that
// copied all of them under the lock would stop every write for seconds. So
// the kinds that grow with the queue or with traffic are kept in the state
// file one record per key, and a checkpoint copies and writes only those
// that changed since the last one:
//
//   - unfinished videos (bucketHotVideos, keyed by account and sequence
//     number, so an account's are read in creation order);
//   - the scheduler's task graphs (bucketHotSched, by sequence number and
//     video id, so new ones append; the scheduler says which changed,
//     scheduler.State.TakeChanged);
//   - idempotency records (bucketHotIdem, by account and key) and webhook
//     events and deliveries (bucketHotEvents by event id,
//     bucketHotDeliveries by delivery id), kept until they expire or are
//     pruned. These are tables (table.go): the file serves them, and
//     memory holds only what changed since the last checkpoint and the
//     pending deliveries;
//   - the app bridge's outbox (appdb_outbox.go), which grows for as long as
//     the app database is away.
//
// Everything else hot (accounts, keys, folders, nodes, webhook endpoints,
// the scheduler's counters and nodes) is small and still goes whole into
// the hot stream at every checkpoint.
//
// A state that keeps a file tracks what changed in the dirty sets below;
// every change to a video in memory calls touch, every change to a table's
// record goes through its put, del or (for one changed in place) mark. A
// change that skipped them would be lost at the next restart:
// TestStoreMatchesMemory restarts from the file at random moments and
// compares every byte with a state that never left memory.
const (
	bucketHotVideos = "hot_videos" // account, 0, seq (8 bytes) → msgpack video
	bucketHotSched  = "hot_sched"  // seq (8 bytes), video id → msgpack scheduler.VideoRecord
	bucketHotIdem   = "hot_idem"   // account, 0, key → msgpack idempotency record

	bucketHotEvents     = "hot_events"     // event id → msgpack event
	bucketHotDeliveries = "hot_deliveries" // delivery id → msgpack delivery
	bucketHotDebits     = "hot_debits"     // account, 0, key → msgpack debit by the app
)

// dirty is what changed and is not yet on disk among the records written
// one by one, each with the generation of its last change. A checkpoint
// writes every entry and starts a new generation; only once its write
// succeeded are the entries of its generation or older dropped. So a
// checkpoint that fails, or a snapshot Raft never persists, loses nothing,
// and what changed while a checkpoint was being written stays for the
// next. The maps are nil in a state without a file (New): nothing would
// ever empty them. The tables (table.go) keep their own, by the same
// generations.
type dirty struct {
	gen    uint64 // the generation changes now belong to
	videos map[string]uint64
	// sched holds the videos whose task graph changed, as taken from the
	// scheduler (scheduler.State.TakeChanged) at each checkpoint.
	sched map[scheduler.Changed]uint64
	// written is the newest generation a checkpoint wrote: one is in
	// flight while it is not gen-1.
	written uint64
	// The changed records copied ahead of the next checkpoint (stage.go),
	// none of them in videos or sched.
	stagedVideos map[string]stagedVideo
	stagedSched  map[scheduler.Changed]stagedSched
	// staging is set while applies stage; backlog* list what was dirty when
	// it began, recent the videos touched since the last apply.
	staging       bool
	backlogVideos []string
	backlogSched  []scheduler.Changed
	recent        []string
}

func newDirty() dirty {
	return dirty{gen: 1, videos: map[string]uint64{}, sched: map[scheduler.Changed]uint64{},
		stagedVideos: map[string]stagedVideo{}, stagedSched: map[scheduler.Changed]stagedSched{}}
}

func (d dirty) tracking() bool { return d.videos != nil }

// newTables makes the state's tables, which track changes whenever the
// state does.
func (s *state) newTables() {
	gen := func() (uint64, bool) { return s.dirty.gen, s.dirty.tracking() }
	staging := func() bool { return s.dirty.staging }
	s.idem = newTable[Idempotency](bucketHotIdem, gen, staging)
	s.idem.at = func(r *Idempotency) (int64, bool) { return r.CreatedAt, true }
	s.events = newTable[Event](bucketHotEvents, gen, staging)
	s.events.at = func(e *Event) (int64, bool) { return e.Created, true }
	s.deliveries = newTable[Delivery](bucketHotDeliveries, gen, staging)
	s.deliveries.at = func(d *Delivery) (int64, bool) { return d.FinishedAt, d.State != DeliveryPending }
	// The deliverer scans the pending ones at every round.
	s.deliveries.hot = func(d *Delivery) bool { return d.State == DeliveryPending }
	s.deliveries.copy = func(d *Delivery) *Delivery { c := d.clone(); return &c }
	s.deliveries.group = func(d *Delivery) ([]string, int64) { return []string{d.WebhookID}, d.CreatedAt }
	s.debits = newTable[Debit](bucketHotDebits, gen, staging)
	s.debits.at = func(d *Debit) (int64, bool) { return d.CreatedAt, true }
	s.grants = newTable[KeyedGrant](bucketHotGrants, gen, staging)
	s.grants.at = func(g *KeyedGrant) (int64, bool) { return g.CreatedAt, true }
	s.accountCreates = newTable[KeyedAccountCreate](bucketHotAccountCreates, gen, staging)
	s.accountCreates.at = func(r *KeyedAccountCreate) (int64, bool) { return r.CreatedAt, true }
	s.appLedger = newTable[LedgerEntry](bucketAppLedger, gen, staging)
	s.appEvents = newTable[VideoEvent](bucketAppEvents, gen, staging)
	s.eventLog = newTable[LoggedEvent](bucketEventLog, gen, staging)
	s.eventLog.at = func(e *LoggedEvent) (int64, bool) { return e.Event.Created, true }
	s.eventLog.group = func(e *LoggedEvent) ([]string, int64) {
		return []string{e.Event.AccountID, typeGroup(e.Event.Type, e.Event.AccountID)}, int64(e.Seq)
	}
	for _, t := range s.tables() {
		t.index()
	}
}

// anyTable is what is done to every table alike.
type anyTable interface {
	clean(gen uint64)
	takeWrites(cp *checkpoint)
	dirtyLen() int
	stagedLen() int
	index()
	stage(gen uint64, begin bool, budget int) int
	load(tx *bbolt.Tx, extra storeExtra) error
	buildIndexes(tx *bbolt.Tx) error
	attach(st *store)
	buckets() []string
}

func (s *state) tables() []anyTable {
	return []anyTable{s.idem, s.events, s.deliveries, s.debits, s.eventLog, s.appLedger, s.appEvents, s.grants, s.accountCreates}
}

// clean drops the entries a checkpoint of generation gen wrote and that did
// not change since.
func (s *state) clean(gen uint64) {
	d := &s.dirty
	maps.DeleteFunc(d.videos, func(_ string, g uint64) bool { return g <= gen })
	maps.DeleteFunc(d.sched, func(_ scheduler.Changed, g uint64) bool { return g <= gen })
	maps.DeleteFunc(d.stagedVideos, func(_ string, v stagedVideo) bool { return v.gen <= gen })
	maps.DeleteFunc(d.stagedSched, func(_ scheduler.Changed, w stagedSched) bool { return w.gen <= gen })
	d.written = max(d.written, gen)
	for _, t := range s.tables() {
		t.clean(gen)
	}
}

// attach gives s its state file: from now on it tracks what changed, for the
// checkpoints that write it there. What it already tracked (a state read
// from a v1 file or a snapshot stream, all dirty) stays to be written.
func (s *state) attach(st *store) {
	s.disk = st
	if !s.dirty.tracking() {
		s.dirty = newDirty()
	}
	for _, t := range s.tables() {
		t.attach(st)
	}
	s.sched.TrackChanges()
}

// touch records that v, in memory, changed.
func (s *state) touch(v *Video) {
	if s.dirty.tracking() {
		s.dirty.videos[v.ID] = s.dirty.gen
		delete(s.dirty.stagedVideos, v.ID) // copied before this change
		if s.dirty.staging {
			s.dirty.recent = append(s.dirty.recent, v.ID)
		}
	}
}

// idemID is an idempotency record's key in its table: the account, a zero
// byte and the client's key, so an account's records sort together.
func idemID(account, key string) string { return account + "\x00" + key }

// schedKey keys a task graph in bucketHotSched: the scheduler's sequence
// number, then the video id. Keyed by the (random) video id, a checkpoint's
// new graphs landed on pages all over the bucket, and bbolt writes every page
// it touches whole: with 35,000 queued videos a checkpoint of 10,000 new
// ones rewrote all of the bucket's ~13,000 pages; in submission order they
// fill new pages at its end.
func schedKey(c scheduler.Changed) []byte {
	return append(binary.BigEndian.AppendUint64(nil, c.Seq), c.ID...)
}

func hotVideoKey(account string, seq uint64) []byte {
	k := append([]byte(account), 0)
	return binary.BigEndian.AppendUint64(k, seq)
}

// hotWrite is one record of a checkpoint: put val, encoded, at key, or
// delete the key when val is nil. val is a copy nothing else changes (a
// video's clone, a task graph's record, an idempotency record, which is
// replaced and never changed), so it is encoded after the lock is let go:
// encoding was three quarters of the time a checkpoint held it.
type hotWrite struct {
	bucket string
	key    []byte
	val    any
	// index keeps a table's index buckets in step (nil: no index).
	index *indexer
}

// takeHot copies the changed records for cp, which writes generation
// cp.gen; the finished videos among them go to cp.videos, for the disk tier.
// The caller holds the lock.
func (s *state) takeHot(cp *checkpoint) error {
	d := &s.dirty
	s.takeSchedChanges()
	cp.gen = d.gen
	d.gen++
	d.stopStaging()
	// This runs under the lock, on the apply path (Raft's FSM.Snapshot):
	// growing the slice record by record was a tenth of it.
	n := len(d.videos) + len(d.sched) + d.staged()
	for _, t := range s.tables() {
		n += t.dirtyLen() + t.stagedLen()
	}
	cp.hot = slices.Grow(cp.hot, n)
	leftovers := maps.Clone(s.diskLeftovers)
	for id := range d.videos {
		v, ok := s.videos[id]
		if !ok { // cannot happen: a dirty video stays in memory (dropWritten)
			return fmt.Errorf("video %s changed but is not in memory", id)
		}
		s.takeVideo(cp, leftovers, newStagedVideo(v, s.seqOf[id], d.gen))
	}
	for _, sv := range d.stagedVideos {
		s.takeVideo(cp, leftovers, sv)
	}
	// In creation order: the lists grow at their ends, bbolt's cheapest write.
	slices.SortFunc(cp.videos, func(a, b diskVideo) int { return cmp.Compare(a.seq, b.seq) })
	cp.extra.Leftovers = slices.Sorted(maps.Keys(leftovers))
	for _, t := range s.tables() {
		t.takeWrites(cp)
	}
	for c := range d.sched {
		cp.hot = append(cp.hot, s.schedWrite(c))
	}
	for _, w := range d.stagedSched {
		cp.hot = append(cp.hot, w.w)
	}
	return nil
}

// takeVideo adds a changed video's writes to cp: an unfinished one to the
// hot records, a finished one to the disk tier (and out of the hot
// records, where it may have been at the last checkpoint).
func (s *state) takeVideo(cp *checkpoint, leftovers map[string]struct{}, sv stagedVideo) {
	v := sv.c
	if !sv.done {
		cp.hot = append(cp.hot, hotWrite{bucket: bucketHotVideos, key: sv.key, val: v})
		return
	}
	cp.hot = append(cp.hot, hotWrite{bucket: bucketHotVideos, key: sv.key})
	_, listed := s.listedOnDisk[v.ID]
	cp.videos = append(cp.videos, diskVideo{v: v, seq: sv.seq, listed: listed, orig: sv.orig})
	if v.leftovers() {
		leftovers[v.ID] = struct{}{}
	} else {
		delete(leftovers, v.ID)
	}
}

// orderedBuckets are those whose new keys come after the old ones
// (sequence numbers, Raft indexes; an account's videos by sequence number).
var orderedBuckets = map[string]bool{bucketHotSched: true, bucketHotVideos: true,
	bucketEventLog: true, bucketAppLedger: true, bucketAppEvents: true}

// fillOrdered is how full bbolt fills a page of an ordered bucket before it
// starts another: at its default of half, pages filled by appends stay half
// empty, and the file and every page a checkpoint writes are twice the size
// (the video lists do the same, putVideos).
const fillOrdered = 0.9

// putHotRecords writes the records in key order: bbolt inserts into a page
// in memory by moving what follows, so puts in random order cost the square
// of a big checkpoint's size (30,000 of them took 4 s), in order they append.
func putHotRecords(tx *bbolt.Tx, writes []hotWrite) (int64, error) {
	slices.SortFunc(writes, func(a, b hotWrite) int {
		return cmp.Or(cmp.Compare(a.bucket, b.bucket), bytes.Compare(a.key, b.key))
	})
	var n int64
	var enc encodeArena
	var index indexOps
	indexed := 0
	for _, w := range writes {
		if w.index != nil {
			indexed++
		}
	}
	// A record has at most three entries (a time and two groups; a time, a
	// group and the hot index): sized once, not grown from empty.
	index.puts = make([]indexOp, 0, 3*indexed)
	var b *bbolt.Bucket
	for i, w := range writes {
		// Sorted by bucket: each is looked up once.
		if i == 0 || w.bucket != writes[i-1].bucket {
			b = tx.Bucket([]byte(w.bucket))
			if orderedBuckets[w.bucket] {
				b.FillPercent = fillOrdered
			}
		}
		if w.index != nil {
			if err := w.index.update(&index, w.key, b.Get(w.key), w.val); err != nil {
				return n, fmt.Errorf("index %s record %q: %w", w.bucket, w.key, err)
			}
		}
		if w.val == nil {
			if err := b.Delete(w.key); err != nil {
				return n, fmt.Errorf("delete %s record %q: %w", w.bucket, w.key, err)
			}
			continue
		}
		body, err := enc.encode(w.val)
		if err != nil {
			return n, fmt.Errorf("encode %s record %q: %w", w.bucket, w.key, err)
		}
		n += int64(len(body))
		if err := b.Put(w.key, body); err != nil {
			return n, fmt.Errorf("store %s record %q: %w", w.bucket, w.key, err)
		}
	}
	return n, index.apply(tx)
}

// loadHotRecords reads the unfinished videos into s, and prepares its
// tables, which read the file as they need it. The scheduler's records are
// read by loadSchedRecords, before the scheduler is restored.
func loadHotRecords(tx *bbolt.Tx, s *state, extra storeExtra) error {
	err := tx.Bucket([]byte(bucketHotVideos)).ForEach(func(k, b []byte) error {
		if len(k) < 9 {
			return fmt.Errorf("hot video key %q too short", k)
		}
		var v Video
		if err := msgpack.Unmarshal(b, &v); err != nil {
			return fmt.Errorf("decode video %q: %w", k, err)
		}
		seq := binary.BigEndian.Uint64(k[len(k)-8:])
		s.videos[v.ID] = &v
		s.seqOf[v.ID] = seq
		// Keys sort by account, then sequence number: creation order.
		s.accountVideos[v.AccountID] = append(s.accountVideos[v.AccountID], v.ID)
		return nil
	})
	if err != nil {
		return err
	}
	for _, t := range s.tables() {
		if err := t.load(tx, extra); err != nil {
			return err
		}
	}
	for _, d := range s.deliveries.mem {
		s.pending.add(d)
	}
	return nil
}

// loadSchedRecords reads the scheduler's task graphs, in submission order.
func loadSchedRecords(tx *bbolt.Tx) ([]scheduler.VideoRecord, error) {
	var out []scheduler.VideoRecord
	err := tx.Bucket([]byte(bucketHotSched)).ForEach(func(k, b []byte) error {
		var r scheduler.VideoRecord
		if err := msgpack.Unmarshal(b, &r); err != nil {
			return fmt.Errorf("decode task graph at key %x: %w", k, err)
		}
		out = append(out, r)
		return nil
	})
	return out, err // in key order: submission order (schedKey)
}

// rekeySched moves the task graphs of a file older than v5, keyed by video
// id, to their keys by sequence number (schedKey).
func rekeySched(tx *bbolt.Tx) error {
	recs, err := loadSchedRecords(tx) // in the old keys' order: by video id
	if err != nil {
		return err
	}
	if err := tx.DeleteBucket([]byte(bucketHotSched)); err != nil {
		return err
	}
	b, err := tx.CreateBucket([]byte(bucketHotSched))
	if err != nil {
		return err
	}
	b.FillPercent = fillOrdered
	slices.SortFunc(recs, func(a, b scheduler.VideoRecord) int { return cmp.Compare(a.Seq, b.Seq) })
	var enc encodeArena
	for _, r := range recs {
		body, err := enc.encode((*schedRecord)(&r))
		if err != nil {
			return fmt.Errorf("encode task graph of %s: %w", r.Video.ID, err)
		}
		if err := b.Put(schedKey(scheduler.Changed{ID: r.Video.ID, Seq: r.Seq}), body); err != nil {
			return err
		}
	}
	return nil
}

// encodeArena encodes the records of one transaction into shared chunks,
// where msgpack.Marshal grows a buffer from empty for each (a checkpoint's
// records were most of what the server allocated under create load). bbolt
// keeps a value's bytes until the commit, so a record's bytes are never
// reused: a full chunk is left to them and a new one started.
type encodeArena struct {
	buf *bytes.Buffer
	enc *msgpack.Encoder
}

// arenaChunk is the size of a chunk; a record that does not fit in what is
// left of one grows it (the records already in it keep the old array).
const arenaChunk = 1 << 20

// encode returns v's bytes as msgpack.Marshal would (both use an encoder's
// defaults).
func (a *encodeArena) encode(v any) ([]byte, error) {
	if a.buf == nil || a.buf.Available() < arenaChunk/16 {
		a.buf = bytes.NewBuffer(make([]byte, 0, arenaChunk))
		if a.enc == nil {
			a.enc = msgpack.NewEncoder(a.buf)
		} else {
			a.enc.Reset(a.buf)
		}
	}
	start := a.buf.Len()
	if err := a.enc.Encode(v); err != nil {
		return nil, err
	}
	b := a.buf.Bytes()[start:]
	return b[:len(b):len(b)], nil
}
