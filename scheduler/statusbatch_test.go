package scheduler

import (
	"fmt"
	"testing"
	"time"
)

// Inside a status batch every video answers as outside it: several
// accounts and priorities, queues small (a slice) and large (a B-tree,
// copied once asked), a node that runs some of them.
func TestStatusBatchAnswersAlike(t *testing.T) {
	s := newState(t, DefaultConfig())
	req := gpuReq("m", 1, 24)
	var ids []string
	for i := range 3000 {
		acct, prio := "bulk", 0
		switch {
		case i%7 == 0:
			acct = "small"
		case i%11 == 0:
			acct, prio = "vip", 1
		}
		id := fmt.Sprintf("v%05d", i)
		submitManual(t, s, id, acct, prio, req, t0)
		ids = append(ids, id)
	}
	if err := s.UpsertNode(gpuNode("n1", 4, 80, "m"), t0); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		if _, err := placeGrant(s, "n1", t0, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]VideoStatus{}
	for _, id := range ids {
		st, err := s.VideoStatus(id)
		if err != nil {
			t.Fatal(err)
		}
		want[id] = st
	}
	s.BeginStatusBatch()
	for _, id := range ids {
		if st, _ := s.VideoStatus(id); st != want[id] {
			t.Fatalf("%s in a batch: %+v, outside: %+v", id, st, want[id])
		}
	}
	copied := 0
	for _, rq := range s.ranks {
		if rq.items != nil {
			copied++
		}
	}
	s.EndStatusBatch()
	if copied == 0 {
		t.Fatal("no queue was copied: the batch path went untested")
	}
	if s.ranks != nil {
		t.Fatal("the batch's copies outlive it")
	}
}
