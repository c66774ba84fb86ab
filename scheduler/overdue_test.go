package scheduler

import (
	"testing"
	"time"
)

// TestOverdue runs ten renders that take 10..100 s and checks that a
// running render is listed once it has run longer than the class's p99
// (the slowest of ten, 100 s) and not before, and that a class with too
// few completions says nothing.
func TestOverdue(t *testing.T) {
	s := newState(t, Config{})
	req := gpuReq("wan", 1, 40)
	must(t, s.UpsertNode(gpuNode("n1", 1, 48, "wan"), at(0)))
	start := 0
	for i := range 10 {
		id := "done" + string(rune('a'+i))
		submitManual(t, s, id, "b", 10, req, at(start))
		l := mustPlace(t, s, "n1", at(start)) // the render
		start += (i + 1) * 10
		_, err := s.Complete(l.Ref(), at(start))
		must(t, err)
		f := mustPlace(t, s, "n1", at(start)) // its finalize, at once
		_, err = s.Complete(f.Ref(), at(start))
		must(t, err)
	}
	submitManual(t, s, "slow", "a", 0, req, at(start))
	l := mustPlace(t, s, "n1", at(start))
	if l.VideoID != "slow" {
		t.Fatalf("placed %s", l.VideoID)
	}
	for _, c := range []struct {
		after   int // seconds the slow render has run
		min     int
		overdue bool
	}{
		{100, 5, false}, // at the p99, not past it
		{101, 5, true},
		{101, 11, false}, // ten completions are too few for this caller
	} {
		got := s.Overdue(at(start+c.after), 0.99, c.min)
		if (len(got) == 1) != c.overdue {
			t.Fatalf("after %d s (min %d): %+v, want overdue %v", c.after, c.min, got, c.overdue)
		}
		if c.overdue {
			o := got[0]
			if o.VideoID != "slow" || o.Quantile != 100*time.Second || o.Running != time.Duration(c.after)*time.Second || o.Samples != 10 {
				t.Fatalf("overdue %+v, want slow past 100 s from 10 samples", o)
			}
		}
	}
	// With q = 0.5 the median (50 s) is the mark.
	if got := s.Overdue(at(start+51), 0.5, 5); len(got) != 1 || got[0].Quantile != 50*time.Second {
		t.Fatalf("median: %+v", got)
	}
}
