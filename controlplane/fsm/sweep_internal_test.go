package fsm

import (
	"slices"
	"testing"
)

// oldState is a state as a version before the garbage list left it:
// finished videos still hold their intermediate artifacts. No command of
// this version makes one, so the test builds it directly.
func oldState() *FSM {
	f := New()
	art := func(id string, names ...string) map[string]string {
		m := map[string]string{}
		for _, n := range names {
			m[n] = "videos/" + id + "/" + n
		}
		return m
	}
	f.s.videos = map[string]*Video{
		"vid_b": {ID: "vid_b", Status: StatusCompleted, // finished before the change
			Outputs:   Outputs{Video: "videos/vid_b/composite/video.mp4", VideoNoCaptions: "videos/vid_b/composite/video_no_captions.mp4"},
			Artifacts: art("vid_b", "plan/plan.json", "scene-0001/clip.mp4", "composite/video.mp4", "composite/video_no_captions.mp4")},
		"vid_a": {ID: "vid_a", Status: StatusFailed, Artifacts: art("vid_a", "render/clip.mp4")},
		"vid_c": {ID: "vid_c", Status: StatusCompleted, // finished since: deliveries only
			Outputs:   Outputs{Video: "videos/vid_c/finalize/video.mp4"},
			Artifacts: art("vid_c", "finalize/video.mp4")},
		"vid_d": {ID: "vid_d", Status: StatusProcessing, Artifacts: art("vid_d", "plan/plan.json")}, // still in use
	}
	return f
}

// TestSweepIntermediates: the intermediates of finished videos go to the
// garbage list, in video then key order, the deliveries and unfinished
// videos' artifacts stay, and a second sweep finds nothing.
func TestSweepIntermediates(t *testing.T) {
	want := []string{"videos/vid_a/render/clip.mp4", "videos/vid_b/plan/plan.json", "videos/vid_b/scene-0001/clip.mp4"}
	var lists [][]string
	for range 2 { // two replicas
		f := oldState()
		if !f.IntermediatesLeft() {
			t.Fatal("IntermediatesLeft does not see the old videos' leftovers")
		}
		if n, err := f.ApplyCommand(&SweepIntermediates{Now: 1}); err != nil || n != 3 {
			t.Fatalf("SweepIntermediates = %v, %v; want 3", n, err)
		}
		g, _ := f.Garbage(10)
		if !slices.Equal(g, want) {
			t.Fatalf("garbage %v, want %v", g, want)
		}
		lists = append(lists, g)
		if b := f.s.videos["vid_b"].Artifacts; len(b) != 2 || b["composite/video.mp4"] == "" || b["composite/video_no_captions.mp4"] == "" {
			t.Errorf("completed video kept %v, want its two deliveries", b)
		}
		if f.s.videos["vid_a"].Artifacts != nil || len(f.s.videos["vid_c"].Artifacts) != 1 || len(f.s.videos["vid_d"].Artifacts) != 1 {
			t.Errorf("artifacts after the sweep: failed %v, new %v, processing %v",
				f.s.videos["vid_a"].Artifacts, f.s.videos["vid_c"].Artifacts, f.s.videos["vid_d"].Artifacts)
		}
		if f.IntermediatesLeft() {
			t.Error("IntermediatesLeft after the sweep")
		}
		if n, err := f.ApplyCommand(&SweepIntermediates{Now: 2}); err != nil || n != 0 {
			t.Errorf("second sweep = %v, %v; want 0", n, err)
		}
	}
	if !slices.Equal(lists[0], lists[1]) {
		t.Error("replicas listed different garbage")
	}
}
