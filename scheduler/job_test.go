package scheduler

import (
	"errors"
	"testing"
)

func TestJobGraphValidate(t *testing.T) {
	v := VideoInfo{ID: "av_1", AccountID: "a1"}
	for name, g := range map[string]Graph{"avatar": AvatarGraph(v), "speech": SpeechGraph(v)} {
		if err := g.Validate(); err != nil {
			t.Errorf("%s graph: %v", name, err)
		}
	}
	cases := map[string]func(g *Graph){
		"two tasks": func(g *Graph) {
			g.Tasks = append(g.Tasks, TaskSpec{Name: "x", Kind: KindSpeech, Req: DefaultSpeechReq()})
		},
		"plan kind":    func(g *Graph) { g.Tasks[0].Kind = KindPlan },
		"awaits":       func(g *Graph) { g.Tasks[0].AwaitsScenes = true },
		"no task":      func(g *Graph) { g.Tasks = nil },
		"unknown kind": func(g *Graph) { g.Tasks[0].Kind = "paint" },
	}
	for name, mutate := range cases {
		g := AvatarGraph(v)
		mutate(&g)
		if err := g.Validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", name, err)
		}
	}
}

// A job is one CPU task: it completes its unit when that task completes, and
// fails it after failing on MaxNodeFailures nodes, like a video's task.
func TestJobFlow(t *testing.T) {
	s := newState(t, Config{})
	cpu := Node{ID: "n1", CPUSlots: 2, Tools: []string{"ffmpeg", "espeak-ng"}}
	must(t, s.UpsertNode(cpu, at(0)))
	must(t, s.Submit(SpeechGraph(VideoInfo{ID: "sp_1", AccountID: "a"}), at(0)))
	l := mustPlace(t, s, "n1", at(1))
	if l.TaskID != "sp_1/speech" || l.Kind != KindSpeech {
		t.Fatalf("lease %+v", l)
	}
	if st, err := s.VideoStatus("sp_1"); err != nil || st.State != VideoProcessing {
		t.Fatalf("status while leased: %+v %v", st, err)
	}
	out, err := s.Complete(l.Ref(), at(2))
	must(t, err)
	if !out.VideoCompleted || out.NeedsScenes {
		t.Fatalf("outcome %+v, want the job completed", out)
	}
	must(t, checkInvariants(s))

	// A node without espeak-ng never gets a speech task.
	must(t, s.UpsertNode(Node{ID: "n2", CPUSlots: 2, Tools: []string{"ffmpeg"}}, at(3)))
	must(t, s.Submit(SpeechGraph(VideoInfo{ID: "sp_2", AccountID: "a"}), at(3)))
	if _, err := s.Place("n2", at(4), leaseDur); !errors.Is(err, ErrNoWork) {
		t.Fatalf("n2 without espeak-ng: %v, want ErrNoWork", err)
	}
	must(t, s.Submit(AvatarGraph(VideoInfo{ID: "av_1", AccountID: "a"}), at(4)))
	l = mustPlace(t, s, "n2", at(5))
	if l.TaskID != "av_1/avatar" {
		t.Fatalf("n2 leased %s, want the avatar job", l.TaskID)
	}
	must(t, checkInvariants(s))
}
