package scheduler

import (
	"fmt"
	"maps"
	"testing"
	"time"
)

// TestEachReadyVisitsExactlyTheReadyTasks compares EachReady with a scan of
// every task, across priorities, accounts, models, a queue long enough to
// move to the B-tree, and after placements took some tasks away.
func TestEachReadyVisitsExactlyTheReadyTasks(t *testing.T) {
	type seen struct {
		kind    Kind
		model   string
		readyAt time.Time
	}
	collect := func(s *State) map[seen]int {
		got := map[seen]int{}
		s.EachReady(func(kind Kind, model string, readyAt time.Time) { got[seen{kind, model, readyAt}]++ })
		return got
	}
	want := func(s *State) map[seen]int {
		out := map[seen]int{}
		for _, tk := range allTasks(s) {
			if tk.state == TaskReady {
				out[seen{tk.kind, tk.cls.req.Model, fromMS(tk.readyAt)}]++
			}
		}
		return out
	}
	s := newState(t, Config{})
	must(t, s.UpsertNode(gpuNode("n1", 2, 80, "m-a", "m-b"), at(0)))
	// 100 videos of one account and model: its queue outgrows smallTasks.
	for i := range 100 {
		submitManual(t, s, fmt.Sprintf("a-%03d", i), "acct-1", 0, gpuReq("m-a", 1, 24), at(i))
	}
	for i := range 5 {
		submitManual(t, s, fmt.Sprintf("b-%d", i), "acct-2", 1, gpuReq("m-b", 1, 24), at(200+i))
	}
	if got, w := collect(s), want(s); !maps.Equal(got, w) || len(w) != 105 {
		t.Fatalf("before placement: EachReady saw %d distinct tasks, want %d (105 ready)", len(got), len(w))
	}
	mustPlace(t, s, "n1", at(300))
	mustPlace(t, s, "n1", at(300))
	got, w := collect(s), want(s)
	if !maps.Equal(got, w) {
		t.Fatalf("after two placements: EachReady saw %v, want %v", got, w)
	}
	n := 0
	for _, c := range got {
		n += c
	}
	if n != s.ReadyTasks() || n != 103 {
		t.Fatalf("EachReady visited %d tasks; ReadyTasks says %d, want 103", n, s.ReadyTasks())
	}
}

func TestEachReadyEmpty(t *testing.T) {
	s := newState(t, Config{})
	s.EachReady(func(Kind, string, time.Time) { t.Fatal("EachReady visited a task of an empty state") })
}

// BenchmarkEachReady walks 100,000 ready tasks: the work a scrape of the
// control plane's queue ages does under the FSM's read lock.
func BenchmarkEachReady(b *testing.B) {
	s := newState(b, Config{})
	for i := range 100_000 {
		submitManual(b, s, fmt.Sprintf("v-%06d", i), fmt.Sprintf("acct-%d", i%1000), 0,
			gpuReq(fmt.Sprintf("m-%d", i%32), 1, 24), at(i%3600))
	}
	b.ResetTimer()
	for b.Loop() {
		n := 0
		s.EachReady(func(Kind, string, time.Time) { n++ })
		if n != 100_000 {
			b.Fatalf("visited %d", n)
		}
	}
}
