package fsm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// A table holds one kind of record that grows with traffic rather than with
// the queue (idempotency records, webhook events and deliveries) in two
// tiers, as the videos are (tiers.go). A state without a file keeps every
// record in mem. With a file, the file holds the records as of the last
// checkpoint, one per key in the table's bucket, and mem holds only what
// changed since (nil for a record deleted since: a tombstone that hides the
// file's copy) and the records marked hot, which never leave memory. A
// checkpoint writes the changed records and then forgets in memory those
// that did not change again meanwhile, so memory holds about one checkpoint
// interval of them however long they are kept.
//
// Every apply must answer the same whichever tier a record is in: replicas
// checkpoint at different moments. Reads go through get, has, before,
// hasPrefix and each, which look at mem first and fall through to the file.
// A record read from the file is a copy nothing else holds: to change it,
// put it back. A record in mem may be changed in place, followed by mark.
type table[V any] struct {
	bucket string
	mem    map[string]*V
	// dirty is each changed key's generation (see dirty in hot.go).
	dirty map[string]uint64
	disk  *store
	// n counts the records in both tiers.
	n int
	// gen is the generation a change now belongs to, and whether the state
	// tracks changes at all (it does once it has a file).
	gen func() (uint64, bool)
	// at is the time a record is found by in before; false leaves it out of
	// the time index. nil: the table has no time index.
	at func(*V) (int64, bool)
	// hot marks a record kept in memory whatever the checkpoints; nil: none.
	hot func(*V) bool
	// group puts a record in a group that eachInGroup lists newest first,
	// by the time it returns (deliveries by endpoint); nil: no groups.
	group func(*V) (string, int64)
	// copy returns a copy that nothing changes later; nil for records that
	// are replaced, never changed in place.
	copy func(*V) *V
}

func newTable[V any](bucket string, gen func() (uint64, bool)) *table[V] {
	return &table[V]{bucket: bucket, mem: map[string]*V{}, dirty: map[string]uint64{}, gen: gen}
}

func (t *table[V]) timeBucket() []byte  { return []byte(t.bucket + "_by_time") }
func (t *table[V]) hotBucket() []byte   { return []byte(t.bucket + "_hot") }
func (t *table[V]) groupBucket() []byte { return []byte(t.bucket + "_by_group") }

// indexed reports whether the table keeps index buckets beside its own.
func (t *table[V]) indexed() bool { return t.at != nil || t.hot != nil || t.group != nil }

func (t *table[V]) mark(k string) {
	if g, ok := t.gen(); ok {
		t.dirty[k] = g
	}
}

// view runs fn in a read transaction of the file; a read racing the node's
// shutdown finds nothing. The file was written by this binary through
// checksummed pages, so a record it cannot read means the replica cannot be
// trusted: it panics, as a video that cannot be read does.
func (t *table[V]) view(fn func(tx *bbolt.Tx) error) {
	err := t.disk.db.View(fn)
	if err != nil && !errors.Is(err, bolterrors.ErrDatabaseNotOpen) {
		panic(fmt.Sprintf("fsm: state store %s: %s: %v", t.disk.path, t.bucket, err))
	}
}

// decode reads a record as the file holds it.
func (t *table[V]) decode(b []byte) (*V, error) {
	v, err := decodeRecord[V](b, t.bucket+" record")
	return &v, err
}

// get returns the record at k.
func (t *table[V]) get(k string) (*V, bool) {
	if v, ok := t.mem[k]; ok {
		return v, v != nil
	}
	if t.disk == nil {
		return nil, false
	}
	var v *V
	t.view(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(t.bucket)).Get([]byte(k))
		if b == nil {
			return nil
		}
		var err error
		if v, err = t.decode(b); err != nil {
			return fmt.Errorf("record %q: %w", k, err)
		}
		return nil
	})
	return v, v != nil
}

// has reports whether a record is at k, without decoding one from the file.
func (t *table[V]) has(k string) bool {
	if v, ok := t.mem[k]; ok {
		return v != nil
	}
	found := false
	if t.disk != nil {
		t.view(func(tx *bbolt.Tx) error {
			found = tx.Bucket([]byte(t.bucket)).Get([]byte(k)) != nil
			return nil
		})
	}
	return found
}

// put stores v at k, new or in place of what was there.
func (t *table[V]) put(k string, v *V) {
	if !t.has(k) {
		t.n++
	}
	t.mem[k] = v
	t.mark(k)
}

// del removes the record at k, if any.
func (t *table[V]) del(k string) {
	if !t.has(k) {
		return
	}
	t.n--
	if t.disk != nil {
		t.mem[k] = nil
	} else {
		delete(t.mem, k)
	}
	t.mark(k)
}

// restore puts a record read from a snapshot stream, marked changed when
// the state tracks changes (the stream is not in the file yet).
func (t *table[V]) restore(k string, v *V) {
	t.n++
	t.mem[k] = v
	t.mark(k)
}

// before returns the keys of the records whose time (at) is before end, in
// no particular order.
func (t *table[V]) before(end int64) []string {
	var keys []string
	for k, v := range t.mem {
		if v == nil {
			continue
		}
		if at, ok := t.at(v); ok && at < end {
			keys = append(keys, k)
		}
	}
	if t.disk == nil {
		return keys
	}
	t.view(func(tx *bbolt.Tx) error {
		c := tx.Bucket(t.timeBucket()).Cursor()
		for ik, _ := c.First(); ik != nil && int64(binary.BigEndian.Uint64(ik)) < end; ik, _ = c.Next() {
			if k := string(ik[8:]); !t.inMem(k) {
				keys = append(keys, k)
			}
		}
		return nil
	})
	return keys
}

func (t *table[V]) inMem(k string) bool { _, ok := t.mem[k]; return ok }

// hasPrefix reports whether any record's key starts with p.
func (t *table[V]) hasPrefix(p string) bool {
	found := false
	t.each(p, func(string, *V) bool { found = true; return false })
	return found
}

// each calls fn with the records whose key starts with prefix, in key
// order, until it returns false.
func (t *table[V]) each(prefix string, fn func(k string, v *V) bool) {
	mem := t.memSorted(prefix)
	if t.disk == nil {
		for _, kv := range mem {
			if kv.v != nil && !fn(kv.k, kv.v) {
				return
			}
		}
		return
	}
	t.view(func(tx *bbolt.Tx) error { return t.merge(tx, prefix, mem, fn) })
}

type keyed[V any] struct {
	k string
	v *V
}

// memSorted returns mem's entries under prefix, tombstones included, in key
// order.
func (t *table[V]) memSorted(prefix string) []keyed[V] {
	var out []keyed[V]
	for k, v := range t.mem {
		if strings.HasPrefix(k, prefix) {
			out = append(out, keyed[V]{k, v})
		}
	}
	slices.SortFunc(out, func(a, b keyed[V]) int { return strings.Compare(a.k, b.k) })
	return out
}

// merge walks the file's records under prefix as tx sees them together with
// mem (sorted, tombstones included, and taking precedence), in key order.
func (t *table[V]) merge(tx *bbolt.Tx, prefix string, mem []keyed[V], fn func(k string, v *V) bool) error {
	c := tx.Bucket([]byte(t.bucket)).Cursor()
	p := []byte(prefix)
	dk, db := c.Seek(p)
	i := 0
	for {
		diskOK := dk != nil && bytes.HasPrefix(dk, p)
		if !diskOK && i == len(mem) {
			return nil
		}
		if i < len(mem) && (!diskOK || mem[i].k <= string(dk)) {
			if diskOK && mem[i].k == string(dk) {
				dk, db = c.Next()
			}
			kv := mem[i]
			i++
			if kv.v != nil && !fn(kv.k, kv.v) {
				return nil
			}
			continue
		}
		v, err := t.decode(db)
		if err != nil {
			return fmt.Errorf("record %q: %w", dk, err)
		}
		if !fn(string(dk), v) {
			return nil
		}
		dk, db = c.Next()
	}
}

// snapshot copies mem's entries under prefix for a snapshot stream, which
// merges them with the file as its read transaction sees it (tableRecords).
// The caller holds the lock.
func (t *table[V]) snapshot(typ recordType, prefix string) tableRecords {
	mem := t.memSorted(prefix)
	for i, kv := range mem {
		if kv.v != nil && t.copy != nil {
			mem[i].v = t.copy(kv.v)
		}
	}
	return tableRecords{typ: typ, walk: func(tx *bbolt.Tx, emit func(any) error) error {
		var err error
		visit := func(_ string, v *V) bool { err = emit(*v); return err == nil }
		if tx == nil {
			for _, kv := range mem {
				if kv.v != nil && !visit(kv.k, kv.v) {
					break
				}
			}
			return err
		}
		if merr := t.merge(tx, prefix, mem, visit); merr != nil {
			return merr
		}
		return err
	}}
}

// tableRecords stands, in a copy of the state, for a table's records under
// one prefix; writeSnapshot expands it. It is never written itself.
type tableRecords struct {
	typ  recordType
	walk func(tx *bbolt.Tx, emit func(any) error) error
}

// takeWrites copies the changed records for a checkpoint; the caller holds
// the lock.
func (t *table[V]) takeWrites(cp *checkpoint) {
	for k := range t.dirty {
		w := hotWrite{bucket: t.bucket, key: []byte(k)}
		if v := t.mem[k]; v != nil {
			if t.copy != nil {
				v = t.copy(v)
			}
			w.val = v
		}
		if t.indexed() {
			w.index = t.indexer()
		}
		cp.hot = append(cp.hot, w)
		cp.written = append(cp.written, t.evicter(k))
	}
	if cp.extra.Tables == nil {
		cp.extra.Tables = map[string]int{}
	}
	cp.extra.Tables[t.bucket] = t.n
}

// evicter returns what forgets k in memory once a checkpoint wrote it: it
// is on disk then, unless it changed again or is hot.
func (t *table[V]) evicter(k string) func() {
	return func() {
		if _, again := t.dirty[k]; again {
			return
		}
		if v := t.mem[k]; v == nil || t.hot == nil || !t.hot(v) {
			delete(t.mem, k)
		}
	}
}

func (t *table[V]) clean(gen uint64) {
	maps.DeleteFunc(t.dirty, func(_ string, g uint64) bool { return g <= gen })
}

// indexer keeps the table's index buckets in step with a record written at
// a checkpoint.
type indexer struct {
	time, hot, group []byte
	// of says a record's index entries.
	of func(val any) entries
	// ofBody says them of a record as the file holds it.
	ofBody func(b []byte) (entries, error)
}

// entries are a record's index entries: its time if it is indexed by time,
// whether it is hot, and its group key without the record's key (nil for
// none).
type entries struct {
	at       int64
	timed    bool
	hot      bool
	groupKey []byte
}

func (t *table[V]) indexer() *indexer {
	of := func(v *V) entries {
		var e entries
		if t.at != nil {
			e.at, e.timed = t.at(v)
		}
		e.hot = t.hot != nil && t.hot(v)
		if t.group != nil {
			if g, at := t.group(v); g != "" {
				e.groupKey = groupKey(g, at)
			}
		}
		return e
	}
	return &indexer{time: t.timeBucket(), hot: t.hotBucket(), group: t.groupBucket(),
		of: func(val any) entries { return of(val.(*V)) },
		ofBody: func(b []byte) (entries, error) {
			v, err := t.decode(b)
			if err != nil {
				return entries{}, err
			}
			return of(v), nil
		}}
}

// groupKey starts a record's key in its group's index: the group, a zero
// byte and the time; the record's key follows, so a group's records sort by
// time, then key.
func groupKey(group string, at int64) []byte {
	return binary.BigEndian.AppendUint64(append([]byte(group), 0), uint64(at))
}

func timeKey(at int64, key []byte) []byte {
	return append(binary.BigEndian.AppendUint64(nil, uint64(at)), key...)
}

// update replaces the index entries of the record at key: old is its body
// in the file (nil for none), val the record written (nil when deleted).
func (ix *indexer) update(tx *bbolt.Tx, key, old []byte, val any) error {
	tb, hb, gb := tx.Bucket(ix.time), tx.Bucket(ix.hot), tx.Bucket(ix.group)
	if old != nil {
		e, err := ix.ofBody(old)
		if err != nil {
			return fmt.Errorf("decode the record it replaces: %w", err)
		}
		if e.timed {
			if err := tb.Delete(timeKey(e.at, key)); err != nil {
				return err
			}
		}
		if e.hot {
			if err := hb.Delete(key); err != nil {
				return err
			}
		}
		if e.groupKey != nil {
			if err := gb.Delete(append(e.groupKey, key...)); err != nil {
				return err
			}
		}
	}
	if val == nil {
		return nil
	}
	e := ix.of(val)
	if e.timed {
		if err := tb.Put(timeKey(e.at, key), nil); err != nil {
			return err
		}
	}
	if e.groupKey != nil {
		if err := gb.Put(append(e.groupKey, key...), nil); err != nil {
			return err
		}
	}
	if e.hot {
		return hb.Put(key, nil)
	}
	return nil
}

// load prepares the table of a state loaded from tx: the hot records in
// memory, the count from extra (or from the file, for one written before
// counts were kept). Nothing is marked changed: the file holds it all.
func (t *table[V]) load(tx *bbolt.Tx, extra storeExtra) error {
	n, ok := extra.Tables[t.bucket]
	if !ok {
		n = tx.Bucket([]byte(t.bucket)).Stats().KeyN
	}
	// A v1 file's records came in its hot stream, counted as they were read.
	t.n += n
	if t.hot == nil {
		return nil
	}
	b := tx.Bucket([]byte(t.bucket))
	return tx.Bucket(t.hotBucket()).ForEach(func(k, _ []byte) error {
		v, err := t.decode(b.Get(k))
		if err != nil {
			return fmt.Errorf("%s record %q: %w", t.bucket, k, err)
		}
		t.mem[string(k)] = v
		return nil
	})
}

// buildIndexes writes the index buckets of a file whose records were
// written before it kept them (format v2).
func (t *table[V]) buildIndexes(tx *bbolt.Tx) error {
	if !t.indexed() {
		return nil
	}
	ix := t.indexer()
	return tx.Bucket([]byte(t.bucket)).ForEach(func(k, b []byte) error {
		v, err := t.decode(b)
		if err != nil {
			return fmt.Errorf("%s record %q: %w", t.bucket, k, err)
		}
		return ix.update(tx, k, nil, v)
	})
}

func (t *table[V]) attach(st *store) { t.disk = st }

// buckets names the table's buckets in the file: its own and its indexes'.
func (t *table[V]) buckets() []string {
	return []string{t.bucket, string(t.timeBucket()), string(t.hotBucket()), string(t.groupBucket())}
}

// groupPos is a record's place in its group: newer is greater.
type groupPos struct {
	at  int64
	key string
}

func (p groupPos) less(q groupPos) bool { return p.at < q.at || (p.at == q.at && p.key < q.key) }

// eachInGroup calls fn with the records of group g, newest first (by the
// group's time, then key, descending), from both tiers, until fn returns
// false. With a non-empty after (the key of a record of the group) it
// starts with the record that follows it; false when after is not one of
// the group's records.
func (t *table[V]) eachInGroup(g, after string, fn func(k string, v *V) bool) bool {
	var bound *groupPos
	if after != "" {
		v, ok := t.get(after)
		if !ok {
			return false
		}
		vg, at := t.group(v)
		if vg != g {
			return false
		}
		bound = &groupPos{at, after}
	}
	var mem []keyed[V]
	pos := map[string]groupPos{}
	for k, v := range t.mem {
		if v == nil {
			continue
		}
		vg, at := t.group(v)
		if p := (groupPos{at, k}); vg == g && (bound == nil || p.less(*bound)) {
			mem = append(mem, keyed[V]{k, v})
			pos[k] = p
		}
	}
	slices.SortFunc(mem, func(a, b keyed[V]) int {
		if pos[a.k].less(pos[b.k]) {
			return 1
		}
		return -1
	})
	visit := func(tx *bbolt.Tx) error {
		var c *bbolt.Cursor
		var prefix []byte
		var dk []byte
		if tx != nil {
			c, prefix = tx.Bucket(t.groupBucket()).Cursor(), append([]byte(g), 0)
			seek := append(slices.Clone(prefix), 0xFF) // after every key of the group: times are below 1<<63
			if bound != nil {
				seek = append(groupKey(g, bound.at), bound.key...)
			}
			if dk, _ = c.Seek(seek); dk == nil {
				dk, _ = c.Last()
			} else {
				dk, _ = c.Prev()
			}
		}
		nextDisk := func() (groupPos, bool) {
			for ; dk != nil && bytes.HasPrefix(dk, prefix) && len(dk) >= len(prefix)+8; dk, _ = c.Prev() {
				p := groupPos{int64(binary.BigEndian.Uint64(dk[len(prefix):])), string(dk[len(prefix)+8:])}
				if !t.inMem(p.key) {
					dk, _ = c.Prev()
					return p, true
				}
			}
			return groupPos{}, false
		}
		dp, dok := groupPos{}, false
		if tx != nil {
			dp, dok = nextDisk()
		}
		i := 0
		for dok || i < len(mem) {
			if i < len(mem) && (!dok || dp.less(pos[mem[i].k])) {
				if !fn(mem[i].k, mem[i].v) {
					return nil
				}
				i++
				continue
			}
			v, err := t.decode(tx.Bucket([]byte(t.bucket)).Get([]byte(dp.key)))
			if err != nil {
				return fmt.Errorf("record %q: %w", dp.key, err)
			}
			if !fn(dp.key, v) {
				return nil
			}
			dp, dok = nextDisk()
		}
		return nil
	}
	if t.disk == nil {
		_ = visit(nil)
		return true
	}
	t.view(visit)
	return true
}
