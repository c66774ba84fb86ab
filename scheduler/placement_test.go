package scheduler

import (
	"errors"
	"fmt"
	"testing"
)

func TestPlaceHardConstraints(t *testing.T) {
	s := newState(t, Config{})
	must(t, s.UpsertNode(gpuNode("small", 2, 24, "wan", "ltx"), at(0)))
	cpuOnly := Node{ID: "cpu", CPUSlots: 4, Tools: []string{"ffmpeg"}}
	must(t, s.UpsertNode(cpuOnly, at(0)))

	submitManual(t, s, "big", "a", 0, gpuReq("wan", 1, 40), at(0))   // too much memory
	submitManual(t, s, "two", "a", 0, gpuReq("wan", 2, 20), at(1))   // 2 GPUs
	submitManual(t, s, "other", "a", 0, gpuReq("sora", 1, 8), at(2)) // unsupported model

	if _, err := s.Place("cpu", at(3), leaseDur); !errors.Is(err, ErrNoWork) {
		t.Fatalf("cpu node got work: %v", err)
	}
	l := mustPlace(t, s, "small", at(3))
	if l.TaskID != "two/render" || len(l.GPUIDs) != 2 {
		t.Fatalf("small node got %+v", l)
	}
	if _, err := s.Place("small", at(4), leaseDur); !errors.Is(err, ErrNoWork) {
		t.Fatalf("full node got work: %v", err)
	}
	must(t, checkInvariants(s))
}

func TestPlaceToolsAndCPUSlots(t *testing.T) {
	s := newState(t, Config{})
	must(t, s.UpsertNode(Node{ID: "n", CPUSlots: 2, Tools: []string{"espeak-ng"}}, at(0)))
	must(t, s.Submit(Graph{Video: VideoInfo{ID: "v", AccountID: "a"}, Mode: ModeManual, Tasks: []TaskSpec{
		{Name: "enc", Kind: KindFinalize, Req: Requirements{CPUSlots: 1, Tools: []string{"ffmpeg"}}},
		{Name: "say", Kind: KindFinalize, Req: Requirements{CPUSlots: 2, Tools: []string{"espeak-ng"}}},
		{Name: "say2", Kind: KindFinalize, Req: Requirements{CPUSlots: 1, Tools: []string{"espeak-ng"}}},
	}}, at(0)))
	l := mustPlace(t, s, "n", at(1))
	if l.TaskID != "v/say" {
		t.Fatalf("got %s, want v/say (enc needs ffmpeg)", l.TaskID)
	}
	if _, err := s.Place("n", at(1), leaseDur); !errors.Is(err, ErrNoWork) {
		t.Fatalf("no CPU slot left, got %v", err)
	}
}

func TestPlaceBestFitGPUsAndMIG(t *testing.T) {
	s := newState(t, Config{})
	nd := Node{ID: "n", CPUSlots: 8, Models: []string{"m"}, GPUs: []GPU{
		{ID: "big", MemoryTotalGB: 80, MemoryFreeGB: 80},
		{ID: "mig-a", MemoryTotalGB: 20, MemoryFreeGB: 20, MIG: true},
		{ID: "mig-b", MemoryTotalGB: 20, MemoryFreeGB: 20, MIG: true},
	}}
	must(t, s.UpsertNode(nd, at(0)))
	submitManual(t, s, "small", "a", 0, gpuReq("m", 1, 16), at(0))
	submitManual(t, s, "pair", "b", 0, gpuReq("m", 2, 16), at(1)) // MIG slices are not combined
	l := mustPlace(t, s, "n", at(2))
	if l.TaskID != "small/render" || l.GPUIDs[0] != "mig-a" {
		t.Fatalf("got %+v, want small on mig-a (best fit)", l)
	}
	if _, err := s.Place("n", at(2), leaseDur); !errors.Is(err, ErrNoWork) {
		t.Fatalf("pair must not run on 1 whole GPU + MIG: %v", err)
	}
	st, _ := s.VideoStatus("pair")
	if st.Reason != ReasonInsufficientGPUMemory {
		t.Fatalf("pair waits with %q: %s", st.Reason, st.Message)
	}
}

func TestPlacePriorityFirst(t *testing.T) {
	s := newState(t, Config{})
	must(t, s.UpsertNode(gpuNode("n", 1, 24, "m"), at(0)))
	submitManual(t, s, "low", "a", 0, gpuReq("m", 1, 8), at(0))
	submitManual(t, s, "high", "b", 5, gpuReq("m", 1, 8), at(1))
	if l := mustPlace(t, s, "n", at(2)); l.VideoID != "high" {
		t.Fatalf("got %s, want high", l.VideoID)
	}
}

// An account with 500 queued videos must not hold back another account's
// single video.
func TestPlaceFairShareManyVsOne(t *testing.T) {
	s := newState(t, Config{})
	for i := range 4 {
		must(t, s.UpsertNode(gpuNode(fmt.Sprintf("n%d", i), 2, 24, "m"), at(0)))
	}
	for i := range 500 {
		submitManual(t, s, fmt.Sprintf("big%03d", i), "bulk", 0, gpuReq("m", 1, 24), at(0))
	}
	// bulk already runs a few videos when the small account shows up.
	for i := range 3 {
		mustPlace(t, s, fmt.Sprintf("n%d", i), at(1))
	}
	submitManual(t, s, "mine", "small", 0, gpuReq("m", 1, 24), at(2))
	st, _ := s.VideoStatus("mine")
	if st.QueuePosition != 1 {
		t.Fatalf("queue position %d, want 1", st.QueuePosition)
	}
	if l := mustPlace(t, s, "n3", at(3)); l.VideoID != "mine" {
		t.Fatalf("got %s, want mine", l.VideoID)
	}
}

func TestPlaceRoundRobinAtEqualRunning(t *testing.T) {
	s := newState(t, Config{})
	must(t, s.UpsertNode(Node{ID: "n", CPUSlots: 1, Tools: []string{"ffmpeg"}}, at(0)))
	for _, a := range []string{"a", "b", "c"} {
		for i := range 3 {
			must(t, s.Submit(Graph{Video: VideoInfo{ID: fmt.Sprintf("%s%d", a, i), AccountID: a}, Mode: ModeManual,
				Tasks: []TaskSpec{{Name: "x", Kind: KindFinalize, Req: DefaultFinalizeReq()}}}, at(i)))
		}
	}
	var got []string
	for i := range 9 {
		l := mustPlace(t, s, "n", at(10+i))
		got = append(got, l.VideoID)
		_, err := s.Complete(l.Ref(), at(10+i))
		must(t, err)
	}
	want := "[a0 b0 c0 a1 b1 c1 a2 b2 c2]"
	if fmt.Sprint(got) != want {
		t.Fatalf("order %v, want %s", got, want)
	}
}

func TestPlaceWarmPreference(t *testing.T) {
	cfg := Config{WarmWindow: DefaultWarmWindow}
	s := newState(t, cfg)
	nd := gpuNode("n", 1, 24, "cold", "hot")
	nd.WarmModels = []string{"hot"}
	must(t, s.UpsertNode(nd, at(0)))
	submitManual(t, s, "c", "a", 0, gpuReq("cold", 1, 8), at(0))
	submitManual(t, s, "h", "b", 0, gpuReq("hot", 1, 8), at(1))
	if l := mustPlace(t, s, "n", at(2)); l.VideoID != "h" {
		t.Fatalf("got %s, want h (warm, same fair share)", l.VideoID)
	}

	// Past the window the older cold task goes first.
	s = newState(t, cfg)
	must(t, s.UpsertNode(nd, at(0)))
	submitManual(t, s, "c", "a", 0, gpuReq("cold", 1, 8), at(0))
	submitManual(t, s, "h", "b", 0, gpuReq("hot", 1, 8), at(1))
	if l := mustPlace(t, s, "n", at(31)); l.VideoID != "c" {
		t.Fatalf("got %s, want c (waited past the warm window)", l.VideoID)
	}
}

func TestPlaceAvoidsNodeThatFailedTask(t *testing.T) {
	s := newState(t, Config{})
	must(t, s.UpsertNode(gpuNode("n1", 1, 24, "m"), at(0)))
	must(t, s.UpsertNode(gpuNode("n2", 1, 24, "m"), at(0)))
	submitManual(t, s, "v", "a", 0, gpuReq("m", 1, 8), at(0))
	submitManual(t, s, "w", "b", 0, gpuReq("m", 1, 8), at(1))
	l := mustPlace(t, s, "n1", at(1))
	if l.VideoID != "v" {
		t.Fatalf("got %s", l.VideoID)
	}
	out, err := s.Fail(l.Ref(), "cuda error", at(2))
	must(t, err)
	if !out.Requeued {
		t.Fatalf("outcome %+v", out)
	}
	if l := mustPlace(t, s, "n1", at(3)); l.VideoID != "w" {
		t.Fatalf("n1 got %s, want w (v failed on n1)", l.VideoID)
	}
	if l := mustPlace(t, s, "n2", at(3)); l.VideoID != "v" {
		t.Fatalf("n2 got %s, want v", l.VideoID)
	}
}

func TestPlaceSingleNodeRetriesFailedTask(t *testing.T) {
	s := newState(t, Config{})
	must(t, s.UpsertNode(gpuNode("n1", 1, 24, "m"), at(0)))
	submitManual(t, s, "v", "a", 0, gpuReq("m", 1, 8), at(0))
	for i := range DefaultMaxAttempts {
		l := mustPlace(t, s, "n1", at(i))
		out, err := s.Fail(l.Ref(), "boom", at(i))
		must(t, err)
		if last := i == DefaultMaxAttempts-1; out.VideoFailed != last || out.Requeued == last {
			t.Fatalf("attempt %d: %+v", i+1, out)
		}
	}
}

func TestPlaceDrainingAndUnknown(t *testing.T) {
	s := newState(t, Config{})
	if _, err := s.Place("nope", at(0), leaseDur); !errors.Is(err, ErrUnknownNode) {
		t.Fatalf("unknown node: %v", err)
	}
	must(t, s.UpsertNode(gpuNode("n", 1, 24, "m"), at(0)))
	submitManual(t, s, "v", "a", 0, gpuReq("m", 1, 8), at(0))
	must(t, s.SetDraining("n", true))
	if _, err := s.Place("n", at(1), leaseDur); !errors.Is(err, ErrNoWork) {
		t.Fatalf("draining node: %v", err)
	}
	st, _ := s.VideoStatus("v")
	if st.Reason != ReasonNoNodeFits {
		t.Fatalf("reason %q", st.Reason)
	}
	must(t, s.SetDraining("n", false))
	mustPlace(t, s, "n", at(2))
	if _, err := s.Place("n", at(2), 0); !errors.Is(err, ErrInvalid) {
		t.Fatalf("zero lease duration: %v", err)
	}
}
