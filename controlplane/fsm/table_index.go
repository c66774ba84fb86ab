package fsm

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"

	"go.etcd.io/bbolt"
)

// The index buckets a table keeps in the file beside its records, updated
// as a checkpoint writes each record (table.go).

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
// whether it is hot, and its groups with the place it takes in them.
type entries struct {
	at      int64
	timed   bool
	hot     bool
	groups  []string
	groupAt int64
}

func (t *table[V]) indexer() *indexer {
	of := func(v *V) entries {
		var e entries
		if t.at != nil {
			e.at, e.timed = t.at(v)
		}
		e.hot = t.hot != nil && t.hot(v)
		if t.group != nil {
			e.groups, e.groupAt = t.group(v)
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

// indexOps are the index entries a transaction deletes and puts, applied
// together in key order by apply: a checkpoint's records come in their own
// key order, in which a group index's entries land all over its buckets, and
// bbolt inserts into a node in memory by moving what follows it (a quarter
// of a checkpoint's time under create load, when they were put one by one).
type indexOps struct {
	dels, puts []indexOp
	// keys holds the entries' keys, carved from shared chunks as
	// encodeArena does with records: bbolt keeps a key until the commit, so
	// none is reused. Built one by one they were three allocations an entry.
	keys []byte
}

type indexOp struct {
	bucket, key []byte
	// ordered: the bucket's new keys come in order (times), see fillOrdered.
	ordered bool
}

// keysChunk is the size of a chunk of keys.
const keysChunk = 64 << 10

// key returns an empty key with room for n bytes.
func (ops *indexOps) key(n int) []byte {
	if cap(ops.keys)-len(ops.keys) < n {
		ops.keys = make([]byte, 0, max(keysChunk, n))
	}
	start := len(ops.keys)
	ops.keys = ops.keys[:start+n]
	return ops.keys[start : start : start+n]
}

// update records the index entries of the record at key to replace: old is
// its body in the file (nil for none), val the record written (nil when
// deleted).
func (ix *indexer) update(ops *indexOps, key, old []byte, val any) error {
	if old != nil {
		e, err := ix.ofBody(old)
		if err != nil {
			return fmt.Errorf("decode the record it replaces: %w", err)
		}
		ops.dels = ix.appendEntries(ops, ops.dels, e, key)
	}
	if val != nil {
		ops.puts = ix.appendEntries(ops, ops.puts, ix.of(val), key)
	}
	return nil
}

// appendEntries appends where a record's index entries are kept: in the
// time index, time and key; in a group's, the group, a zero byte, its
// place in the group and the key, so a group's records sort by place, then
// key; in the hot index, the key.
func (ix *indexer) appendEntries(ops *indexOps, out []indexOp, e entries, key []byte) []indexOp {
	if e.timed {
		k := binary.BigEndian.AppendUint64(ops.key(8+len(key)), uint64(e.at))
		out = append(out, indexOp{ix.time, append(k, key...), true})
	}
	for _, g := range e.groups {
		k := append(ops.key(len(g)+1+8+len(key)), g...)
		k = binary.BigEndian.AppendUint64(append(k, 0), uint64(e.groupAt))
		out = append(out, indexOp{ix.group, append(k, key...), false})
	}
	if e.hot {
		out = append(out, indexOp{ix.hot, key, false})
	}
	return out
}

// apply deletes, then puts, each in key order. The entries of different
// records differ (each ends in its record's key) and a transaction updates
// a record once, so only a record's own entries can be both deleted and put
// (its index did not change), and deleting first keeps them.
func (ops *indexOps) apply(tx *bbolt.Tx) error {
	byKey := func(a, b indexOp) int {
		return cmp.Or(bytes.Compare(a.bucket, b.bucket), bytes.Compare(a.key, b.key))
	}
	slices.SortFunc(ops.dels, byKey)
	slices.SortFunc(ops.puts, byKey)
	for _, op := range ops.dels {
		if err := tx.Bucket(op.bucket).Delete(op.key); err != nil {
			return fmt.Errorf("index %s: delete %q: %w", op.bucket, op.key, err)
		}
	}
	for _, op := range ops.puts {
		b := tx.Bucket(op.bucket)
		if op.ordered {
			b.FillPercent = fillOrdered
		}
		if err := b.Put(op.key, nil); err != nil {
			return fmt.Errorf("index %s: put %q: %w", op.bucket, op.key, err)
		}
	}
	return nil
}

// buildIndexes writes the index buckets of a file whose records were
// written before it kept them (format v2).
func (t *table[V]) buildIndexes(tx *bbolt.Tx) error {
	if !t.indexed() {
		return nil
	}
	ix := t.indexer()
	var ops indexOps
	err := tx.Bucket([]byte(t.bucket)).ForEach(func(k, b []byte) error {
		v, err := t.decode(b)
		if err != nil {
			return fmt.Errorf("%s record %q: %w", t.bucket, k, err)
		}
		return ix.update(&ops, k, nil, v)
	})
	if err != nil {
		return err
	}
	return ops.apply(tx)
}

// oldest returns the keys of up to limit records whose time (at) is before
// end, oldest first (by time, then key), from both tiers: the same keys
// whichever tier holds them, so a command that trims by it stays
// deterministic.
func (t *table[V]) oldest(end int64, limit int) []string {
	var mem []groupPos
	for k, v := range t.mem {
		if v == nil {
			continue
		}
		if at, ok := t.at(v); ok && at < end {
			mem = append(mem, groupPos{at, k})
		}
	}
	slices.SortFunc(mem, func(a, b groupPos) int {
		if a.less(b) {
			return -1
		}
		return 1
	})
	out := make([]string, 0, min(limit, len(mem)))
	if t.disk == nil {
		for _, p := range mem[:min(limit, len(mem))] {
			out = append(out, p.key)
		}
		return out
	}
	t.view(func(tx *bbolt.Tx) error {
		c := tx.Bucket(t.timeBucket()).Cursor()
		ik, _ := c.First()
		nextDisk := func() (groupPos, bool) {
			for ; ik != nil && int64(binary.BigEndian.Uint64(ik)) < end; ik, _ = c.Next() {
				if k := string(ik[8:]); !t.inMem(k) {
					p := groupPos{int64(binary.BigEndian.Uint64(ik)), k}
					ik, _ = c.Next()
					return p, true
				}
			}
			return groupPos{}, false
		}
		dp, dok := nextDisk()
		i := 0
		for len(out) < limit && (dok || i < len(mem)) {
			if i < len(mem) && (!dok || mem[i].less(dp)) {
				out = append(out, mem[i].key)
				i++
				continue
			}
			out = append(out, dp.key)
			dp, dok = nextDisk()
		}
		return nil
	})
	return out
}
