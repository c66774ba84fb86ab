package fsm

import (
	"maps"
	"math"
	"slices"
)

// A table's records are staged as the videos are (stage.go): a record
// changed since the last checkpoint is copied ahead into staged, with the
// generation it was staged in, and leaves dirty; a change after that
// (mark) drops the staged write. mem keeps the record either way: it is
// not in the file until a checkpoint writes it.

// stagedRow is a table record's write, made ahead of a checkpoint.
type stagedRow struct {
	w   hotWrite
	gen uint64
}

// stage stages every record changed since the last call and up to budget
// of the backlog (what was dirty when staging began, listed when begin is
// set), and returns what is left of the budget. The caller holds the lock.
func (t *table[V]) stage(gen uint64, begin bool, budget int) int {
	if begin {
		t.backlog = slices.AppendSeq(t.backlog[:0], maps.Keys(t.dirty))
	}
	one := func(k string) bool { return t.stageRow(k, gen) }
	stageFrom(&t.recent, math.MaxInt, one)
	return stageFrom(&t.backlog, budget, one)
}

// stageRow stages k if it is dirty, and reports whether it was.
func (t *table[V]) stageRow(k string, gen uint64) bool {
	if _, ok := t.dirty[k]; !ok {
		return false // staged already, or listed twice
	}
	t.staged[k] = stagedRow{w: t.write(k), gen: gen}
	delete(t.dirty, k)
	return true
}

// stopStaging drops the lists of an interval's staging.
func (t *table[V]) stopStaging() {
	clear(t.recent)
	t.recent = t.recent[:0]
	clear(t.backlog)
	t.backlog = t.backlog[:0]
}

// write is a checkpoint's write of the record at k: a copy nothing changes
// later, or a delete.
func (t *table[V]) write(k string) hotWrite {
	w := hotWrite{bucket: t.bucket, key: []byte(k), index: t.ix}
	if v := t.mem[k]; v != nil {
		if t.copy != nil {
			v = t.copy(v)
		}
		w.val = v
	}
	return w
}
