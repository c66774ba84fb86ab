package fsm

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"

	"go.etcd.io/bbolt"
)

// Groups: a table may list its records by group (deliveries by endpoint,
// newest first; log events by account, oldest first), through an index
// bucket in the file merged with memory.

// groupPos is a record's place in its groups: later is greater.
type groupPos struct {
	at  int64
	key string
}

func (p groupPos) less(q groupPos) bool { return p.at < q.at || (p.at == q.at && p.key < q.key) }

// position returns the place of the record at k in its groups and whether
// it is in group g; false when there is no record at k.
func (t *table[V]) position(k, g string) (groupPos, bool, bool) {
	v, ok := t.get(k)
	if !ok {
		return groupPos{}, false, false
	}
	gs, at := t.group(v)
	return groupPos{at, k}, slices.Contains(gs, g), true
}

// eachInGroup calls fn with the records of group g, newest first (by the
// group's time, then key, descending), from both tiers, until fn returns
// false. With a non-empty after (the key of a record of the group) it
// starts with the record that follows it; false when after is not one of
// the group's records.
func (t *table[V]) eachInGroup(g, after string, fn func(k string, v *V) bool) bool {
	var from *groupPos
	if after != "" {
		p, in, ok := t.position(after, g)
		if !ok || !in {
			return false
		}
		from = &p
	}
	t.walkGroup(g, from, true, fn)
	return true
}

// walkGroup calls fn with the records of group g past from (nil: from the
// first), oldest first or, with desc, newest first, from both tiers, until
// fn returns false. from need not be a record of g: the records of g that
// come after its place are listed.
func (t *table[V]) walkGroup(g string, from *groupPos, desc bool, fn func(k string, v *V) bool) {
	// first reports whether a comes before b in the walk.
	first := func(a, b groupPos) bool { return a.less(b) }
	if desc {
		first = func(a, b groupPos) bool { return b.less(a) }
	}
	var mem []keyed[V]
	pos := map[string]groupPos{}
	for k, v := range t.mem {
		if v == nil {
			continue
		}
		gs, at := t.group(v)
		if p := (groupPos{at, k}); slices.Contains(gs, g) && (from == nil || first(*from, p)) {
			mem = append(mem, keyed[V]{k, v})
			pos[k] = p
		}
	}
	slices.SortFunc(mem, func(a, b keyed[V]) int {
		if first(pos[a.k], pos[b.k]) {
			return -1
		}
		return 1
	})
	visit := func(tx *bbolt.Tx) error {
		var prefix, dk []byte
		var step func() ([]byte, []byte)
		if tx != nil {
			c := tx.Bucket(t.groupBucket()).Cursor()
			prefix, step = append([]byte(g), 0), c.Next
			if desc {
				step = c.Prev
			}
			dk = seekGroup(c, prefix, from, desc)
		}
		nextDisk := func() (groupPos, bool) {
			for ; dk != nil && bytes.HasPrefix(dk, prefix) && len(dk) >= len(prefix)+8; dk, _ = step() {
				p := groupPos{int64(binary.BigEndian.Uint64(dk[len(prefix):])), string(dk[len(prefix)+8:])}
				if !t.inMem(p.key) {
					dk, _ = step()
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
			if i < len(mem) && (!dok || first(pos[mem[i].k], dp)) {
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
		return
	}
	t.view(visit)
}

// seekGroup places c on the first index key of the group (prefix) past
// from in the walk's direction, or on a key outside the group (or nil)
// when there is none.
func seekGroup(c *bbolt.Cursor, prefix []byte, from *groupPos, desc bool) []byte {
	var seek []byte
	switch {
	case from != nil:
		seek = append(binary.BigEndian.AppendUint64(slices.Clone(prefix), uint64(from.at)), from.key...)
	case desc:
		seek = append(slices.Clone(prefix), 0xFF) // after every key of the group: times are below 1<<63
	default:
		seek = prefix
	}
	dk, _ := c.Seek(seek)
	if desc {
		if dk == nil {
			dk, _ = c.Last()
		} else {
			dk, _ = c.Prev()
		}
		return dk
	}
	if from != nil && bytes.Equal(dk, seek) {
		dk, _ = c.Next()
	}
	return dk
}
