package fsm

import (
	"encoding/binary"
	"fmt"

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
