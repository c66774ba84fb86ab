package scheduler

import (
	"testing"
	"time"
)

func TestExpiryDueMatchesExpire(t *testing.T) {
	s, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1000, 0)
	if err := s.UpsertNode(Node{ID: "n", CPUSlots: 2}, t0); err != nil {
		t.Fatal(err)
	}
	if err := s.Submit(AutoGraph(VideoInfo{ID: "v", AccountID: "a"}), t0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Place("n", t0, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		at   time.Duration
		want bool
	}{
		{0, false},
		{9 * time.Second, false},
		{10 * time.Second, true}, // the lease's deadline
	} {
		if got := s.ExpiryDue(t0.Add(c.at)); got != c.want {
			t.Errorf("ExpiryDue(+%v) = %v, want %v", c.at, got, c.want)
		}
	}
	res := s.Expire(t0.Add(10 * time.Second))
	if len(res.Expired) != 1 {
		t.Fatalf("Expire at the deadline: %+v", res)
	}
	if s.ExpiryDue(t0.Add(10 * time.Second)) {
		t.Fatal("still due right after Expire")
	}
	// The node last spoke at the Place at t0: due exactly NodeTimeout later, not before.
	if s.ExpiryDue(t0.Add(DefaultNodeTimeout - time.Millisecond)) {
		t.Fatal("a node reported silent before its timeout")
	}
	if !s.ExpiryDue(t0.Add(DefaultNodeTimeout)) {
		t.Fatal("a silent node is not reported as due at its timeout")
	}
}
