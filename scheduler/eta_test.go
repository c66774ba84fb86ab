package scheduler

import (
	"testing"
	"time"
)

// TestEstimateWait queues videos behind a node that completes a render a
// minute and checks the estimate against the Gamma wait it approximates.
func TestEstimateWait(t *testing.T) {
	s := newState(t, Config{})
	req := gpuReq("wan", 1, 40)
	if _, ok := s.EstimateWait("nope", at(0)); ok {
		t.Fatal("an estimate for an unknown video")
	}
	submitManual(t, s, "v0", "a", 0, req, at(0))
	if _, ok := s.EstimateWait("v0", at(0)); ok {
		t.Fatal("an estimate with no node able to run it")
	}
	must(t, s.UpsertNode(gpuNode("n1", 1, 48, "wan"), at(0)))
	if _, ok := s.EstimateWait("v0", at(0)); ok {
		t.Fatal("an estimate without any recent completion")
	}
	// Eleven renders, one a minute (60 s apart), each finished at once with
	// its finalize (another class).
	for i := range 11 {
		id := "done" + string(rune('a'+i))
		submitManual(t, s, id, "b", 10, req, at(i*60))
		for range 2 { // render, then finalize
			l := mustPlace(t, s, "n1", at(i*60))
			if l.VideoID != id {
				t.Fatalf("placed %s, want %s", l.VideoID, id)
			}
			_, err := s.Complete(l.Ref(), at(i*60))
			must(t, err)
		}
	}
	// Four more queued behind v0: the fifth waits for five completions.
	for i := range 4 {
		submitManual(t, s, "q"+string(rune('0'+i)), "a", 0, req, at(601))
	}
	now := at(600)
	est, ok := s.EstimateWait("q3", now)
	if !ok {
		t.Fatal("no estimate with ten completions in the window")
	}
	// Rate: 11 completions over 600 s. Gamma(5, rate) median ≈ 4.67/rate.
	rate := 11.0 / 600
	if got, want := est.P50.Seconds(), 4.67/rate; got < want*0.98 || got > want*1.02 {
		t.Fatalf("p50 %.1f s, want about %.1f", got, want)
	}
	if got, want := est.P90.Seconds(), 7.99/rate; got < want*0.97 || got > want*1.03 {
		t.Fatalf("p90 %.1f s, want about %.1f (Gamma(5) 90th percentile 7.99)", got, want)
	}
	first, _ := s.EstimateWait("v0", now)
	if first.P50 >= est.P50 || first.P50 <= 0 {
		t.Fatalf("the first in the queue waits %v, the fifth %v", first.P50, est.P50)
	}
	// Completions older than the window do not count.
	if _, ok := s.EstimateWait("q3", now.Add(31*time.Minute)); ok {
		t.Fatal("an estimate from completions over 30 minutes old")
	}
}
