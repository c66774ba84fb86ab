package scheduler

import (
	"errors"
	"fmt"
	"testing"
)

func TestStatusReasons(t *testing.T) {
	s := newState(t, Config{})
	must(t, s.UpsertNode(gpuNode("n", 1, 24, "wan"), at(0)))
	submitManual(t, s, "unsupported", "a", 0, gpuReq("sora", 1, 8), at(0))
	submitManual(t, s, "toobig", "a", 0, gpuReq("wan", 1, 40), at(0))
	submitManual(t, s, "first", "a", 0, gpuReq("wan", 1, 8), at(1))
	submitManual(t, s, "second", "a", 0, gpuReq("wan", 1, 8), at(2))
	submitManual(t, s, "theirs", "b", 0, gpuReq("wan", 1, 8), at(3))

	l := mustPlace(t, s, "n", at(4))
	if l.VideoID != "first" {
		t.Fatalf("placed %s", l.VideoID)
	}
	want := map[string]Reason{
		"unsupported": ReasonNoNodeSupportsModel,
		"toobig":      ReasonInsufficientGPUMemory,
		"first":       ReasonNone,
		"second":      ReasonFairShare, // a runs one, b runs none
		"theirs":      ReasonNodesBusy,
	}
	for id, r := range want {
		st, err := s.VideoStatus(id)
		must(t, err)
		if st.Reason != r {
			t.Errorf("%s: reason %q (%s), want %q", id, st.Reason, st.Message, r)
		}
		if (r == ReasonNone) != (st.QueuePosition == 0) || (r != ReasonNone && st.Message == "") {
			t.Errorf("%s: position %d message %q", id, st.QueuePosition, st.Message)
		}
	}
	if st, _ := s.VideoStatus("theirs"); st.QueuePosition != 1 {
		t.Errorf("theirs: position %d, want 1", st.QueuePosition)
	}
	if st, _ := s.VideoStatus("second"); st.QueuePosition != 2 || st.State != VideoQueued {
		t.Errorf("second: %+v", st)
	}
	if st, _ := s.VideoStatus("first"); st.State != VideoProcessing {
		t.Errorf("first: %+v", st)
	}
	if _, err := s.VideoStatus("nope"); !errors.Is(err, ErrUnknownVideo) {
		t.Errorf("unknown video: %v", err)
	}
}

// Once SetNextInLine is on, a task that nothing waits ahead of says it is
// next in line, not that the nodes are busy with work ahead of it: a video
// created on an idle farm before a node takes it, or the first in line for
// a full one. The task behind it is still behind work.
func TestStatusNextInLine(t *testing.T) {
	for _, on := range []bool{false, true} {
		s := newState(t, Config{})
		s.SetNextInLine(on)
		must(t, s.UpsertNode(gpuNode("n", 1, 24, "wan"), at(0)))
		submitManual(t, s, "idle-farm", "a", 0, gpuReq("wan", 1, 8), at(1))
		first, err := s.VideoStatus("idle-farm")
		must(t, err)
		submitManual(t, s, "behind", "b", 0, gpuReq("wan", 1, 8), at(2))
		behind, err := s.VideoStatus("behind")
		must(t, err)
		wantFirst := ReasonNodesBusy
		if on {
			wantFirst = ReasonNextInLine
		}
		if first.QueuePosition != 1 || first.Reason != wantFirst || first.Message == "" {
			t.Errorf("on=%v: first in line on an idle node: %+v", on, first)
		}
		if behind.QueuePosition != 2 || behind.Reason != ReasonNodesBusy {
			t.Errorf("on=%v: second in line: %+v", on, behind)
		}
		mustPlace(t, s, "n", at(3)) // the node takes the first; the other is now first, the node full
		st, err := s.VideoStatus("behind")
		must(t, err)
		if st.QueuePosition != 1 || st.Reason != wantFirst {
			t.Errorf("on=%v: first in line for a full node: %+v", on, st)
		}
	}
}

// Queue positions follow the order in which Place then serves the videos
// when nothing finishes meanwhile.
func TestQueuePositionMatchesServiceOrder(t *testing.T) {
	s := newState(t, Config{})
	for i := range 30 {
		must(t, s.UpsertNode(gpuNode(fmt.Sprintf("n%02d", i), 1, 24, "m"), at(0)))
	}
	sec := 0
	for i, acct := range []string{"a", "a", "a", "a", "b", "c", "c", "a", "b", "d"} {
		prio := 0
		if i == 9 {
			prio = 1
		}
		submitManual(t, s, fmt.Sprintf("v%d", i), acct, prio, gpuReq("m", 1, 8), at(sec))
		sec++
	}
	mustPlace(t, s, "n00", at(sec)) // d's high-priority video
	mustPlace(t, s, "n01", at(sec)) // a
	pos := map[string]int{}
	for id := range s.videos {
		st, _ := s.VideoStatus(id)
		if st.QueuePosition > 0 {
			pos[id] = st.QueuePosition
		}
	}
	for i := 2; len(pos) > 0; i++ {
		l := mustPlace(t, s, fmt.Sprintf("n%02d", i), at(sec))
		if p, ok := pos[l.VideoID]; !ok || p != i-1 {
			t.Fatalf("placement %d took %s, whose position was %d (positions %v)", i-1, l.VideoID, p, pos)
		}
		delete(pos, l.VideoID)
	}
}
