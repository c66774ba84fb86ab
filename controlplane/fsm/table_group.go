package fsm

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"

	"go.etcd.io/bbolt"
)

// Groups: a table may list its records by group, newest first (deliveries
// by endpoint), through an index bucket in the file merged with memory.

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
