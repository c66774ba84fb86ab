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
	// group puts a record in groups that eachInGroup and walkGroup list in
	// order of the time it returns, then key (deliveries by endpoint; log
	// events by account and by account and type, in order of their sequence
	// number); nil: no groups. A group's name holds no zero byte: it ends
	// the name in the index's keys.
	group func(*V) ([]string, int64)
	// copy returns a copy that nothing changes later; nil for records that
	// are replaced, never changed in place.
	copy func(*V) *V
	// ix keeps the index buckets in step with a write (nil: no index); set
	// by index once at, hot and group are.
	ix *indexer
	// The writes staged ahead of the next checkpoint (table_stage.go), none
	// of them in dirty; staging reports whether the applies stage now,
	// and backlog and recent are what they stage from.
	staged  map[string]stagedRow
	staging func() bool
	backlog []string
	recent  []string
}

func newTable[V any](bucket string, gen func() (uint64, bool), staging func() bool) *table[V] {
	return &table[V]{bucket: bucket, mem: map[string]*V{}, dirty: map[string]uint64{}, gen: gen,
		staged: map[string]stagedRow{}, staging: staging}
}

// index makes the table's indexer, once its at, hot and group are set.
func (t *table[V]) index() {
	if t.indexed() {
		t.ix = t.indexer()
	}
}

func (t *table[V]) timeBucket() []byte  { return []byte(t.bucket + "_by_time") }
func (t *table[V]) hotBucket() []byte   { return []byte(t.bucket + "_hot") }
func (t *table[V]) groupBucket() []byte { return []byte(t.bucket + "_by_group") }

// indexed reports whether the table keeps index buckets beside its own.
func (t *table[V]) indexed() bool { return t.at != nil || t.hot != nil || t.group != nil }

func (t *table[V]) mark(k string) {
	if g, ok := t.gen(); ok {
		t.dirty[k] = g
		delete(t.staged, k) // copied before this change
		if t.staging() {
			t.recent = append(t.recent, k)
		}
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
func (t *table[V]) put(k string, v *V) { t.set(k, v, t.has(k)) }

// set is put for a caller that just looked k up (existed: whether a record
// was there), so that the file is not read a second time on the apply path.
func (t *table[V]) set(k string, v *V, existed bool) {
	if !existed {
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

// expire deletes the records whose time (at) is before end and says how
// many.
func (t *table[V]) expire(end int64) int {
	keys := t.before(end)
	for _, k := range keys {
		t.del(k)
	}
	return len(keys)
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
	t.eachRange(prefix, "", "", fn)
}

// eachRange is each for the records whose key starts with prefix, is at or
// after start and (unless end is "") before end. Only mem's entries in the
// range are sorted, so a short range of a table with many changes since
// the last checkpoint costs little.
func (t *table[V]) eachRange(prefix, start, end string, fn func(k string, v *V) bool) {
	mem := t.memSorted(prefix, start, end)
	if t.disk == nil {
		for _, kv := range mem {
			if kv.v != nil && !fn(kv.k, kv.v) {
				return
			}
		}
		return
	}
	t.view(func(tx *bbolt.Tx) error { return t.merge(tx, prefix, start, end, mem, fn) })
}

// firstFrom returns the record with the least key at or after start,
// without sorting mem: a scan of it for the least, then the file's first
// key not changed since the last checkpoint.
func (t *table[V]) firstFrom(start string) (string, *V, bool) {
	var mk string
	var mv *V
	for k, v := range t.mem {
		if v != nil && k >= start && (mv == nil || k < mk) {
			mk, mv = k, v
		}
	}
	if t.disk == nil {
		return mk, mv, mv != nil
	}
	t.view(func(tx *bbolt.Tx) error {
		c := tx.Bucket([]byte(t.bucket)).Cursor()
		for k, b := c.Seek([]byte(start)); k != nil && (mv == nil || string(k) < mk); k, b = c.Next() {
			if t.inMem(string(k)) {
				continue // changed since: mem's record, or its tombstone, stands
			}
			v, err := t.decode(b)
			if err != nil {
				return fmt.Errorf("record %q: %w", k, err)
			}
			mk, mv = string(k), v
			return nil
		}
		return nil
	})
	return mk, mv, mv != nil
}

type keyed[V any] struct {
	k string
	v *V
}

// memSorted returns mem's entries under prefix from start on and before end
// ("": no end), tombstones included, in key order.
func (t *table[V]) memSorted(prefix, start, end string) []keyed[V] {
	var out []keyed[V]
	for k, v := range t.mem {
		if strings.HasPrefix(k, prefix) && k >= start && (end == "" || k < end) {
			out = append(out, keyed[V]{k, v})
		}
	}
	slices.SortFunc(out, func(a, b keyed[V]) int { return strings.Compare(a.k, b.k) })
	return out
}

// merge walks the file's records under prefix from start on and before end
// ("": no end) as tx sees them together with mem (sorted, tombstones
// included, and taking precedence), in key order.
func (t *table[V]) merge(tx *bbolt.Tx, prefix, start, end string, mem []keyed[V], fn func(k string, v *V) bool) error {
	c := tx.Bucket([]byte(t.bucket)).Cursor()
	p := []byte(prefix)
	dk, db := c.Seek([]byte(max(prefix, start)))
	i := 0
	for {
		diskOK := dk != nil && bytes.HasPrefix(dk, p) && (end == "" || string(dk) < end)
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
	mem := t.memSorted(prefix, "", "")
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
		if merr := t.merge(tx, prefix, "", "", mem, visit); merr != nil {
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
		cp.hot = append(cp.hot, t.write(k))
		cp.written = append(cp.written, t.evicter(k))
	}
	for k, r := range t.staged {
		cp.hot = append(cp.hot, r.w)
		cp.written = append(cp.written, t.evicter(k))
	}
	t.stopStaging()
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
		if _, again := t.staged[k]; again {
			return
		}
		if v := t.mem[k]; v == nil || t.hot == nil || !t.hot(v) {
			delete(t.mem, k)
		}
	}
}

// dirtyLen is how many records changed since the last checkpoint are not
// staged yet, and stagedLen how many are: the next checkpoint writes both.
func (t *table[V]) dirtyLen() int  { return len(t.dirty) }
func (t *table[V]) stagedLen() int { return len(t.staged) }

func (t *table[V]) clean(gen uint64) {
	maps.DeleteFunc(t.dirty, func(_ string, g uint64) bool { return g <= gen })
	maps.DeleteFunc(t.staged, func(_ string, r stagedRow) bool { return r.gen <= gen })
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

func (t *table[V]) attach(st *store) { t.disk = st }

// buckets names the table's buckets in the file: its own and its indexes'.
func (t *table[V]) buckets() []string {
	return []string{t.bucket, string(t.timeBucket()), string(t.hotBucket()), string(t.groupBucket())}
}
