package scheduler

import (
	"errors"
	"math"
	"slices"
	"testing"
)

func TestGraphValidate(t *testing.T) {
	v := VideoInfo{ID: "v1", AccountID: "a1"}
	good := ManualGraph(v, gpuReq("m", 1, 24))
	if err := good.Validate(); err != nil {
		t.Fatalf("manual graph: %v", err)
	}
	if err := AutoGraph(v).Validate(); err != nil {
		t.Fatalf("auto graph: %v", err)
	}
	cases := map[string]func(g *Graph){
		"no video id":   func(g *Graph) { g.Video.ID = "" },
		"no account":    func(g *Graph) { g.Video.AccountID = "" },
		"bad mode":      func(g *Graph) { g.Mode = "x" },
		"slash in name": func(g *Graph) { g.Tasks[0].Name = "a/b" },
		"dup name":      func(g *Graph) { g.Tasks[1].Name = g.Tasks[0].Name },
		"forward dep":   func(g *Graph) { g.Tasks[0].Deps = []string{NameFinalize} },
		"scene kind":    func(g *Graph) { g.Tasks[0].Kind = KindScene },
		"neg gpus":      func(g *Graph) { g.Tasks[0].Req.GPUs = -1 },
		"mem no gpu":    func(g *Graph) { g.Tasks[1].Req.GPUMemoryGB = 3 },
		"nothing":       func(g *Graph) { g.Tasks[1].Req = Requirements{} },
		"awaits manual": func(g *Graph) { g.Tasks[1].AwaitsScenes = true },
	}
	for name, mutate := range cases {
		g := ManualGraph(v, gpuReq("m", 1, 24))
		mutate(&g)
		if err := g.Validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", name, err)
		}
	}
}

func TestSubmitDuplicate(t *testing.T) {
	s := newState(t, Config{})
	submitManual(t, s, "v1", "a", 0, gpuReq("m", 1, 24), at(0))
	err := s.Submit(ManualGraph(VideoInfo{ID: "v1", AccountID: "b"}, gpuReq("m", 1, 24)), at(1))
	if !errors.Is(err, ErrDuplicate) {
		t.Fatalf("got %v, want ErrDuplicate", err)
	}
}

func TestManualFlow(t *testing.T) {
	s := newState(t, Config{})
	must(t, s.UpsertNode(gpuNode("n1", 1, 24, "m"), at(0)))
	submitManual(t, s, "v1", "a", 0, gpuReq("m", 1, 24), at(0))

	l := mustPlace(t, s, "n1", at(1))
	if l.TaskID != "v1/render" || l.Token != 1 || len(l.GPUIDs) != 1 {
		t.Fatalf("first lease %+v", l)
	}
	out, err := s.Complete(l.Ref(), at(2))
	must(t, err)
	if out.VideoCompleted {
		t.Fatal("video completed after render")
	}
	l = mustPlace(t, s, "n1", at(3))
	if l.TaskID != "v1/finalize" || l.Token != 2 {
		t.Fatalf("second lease %+v", l)
	}
	out, err = s.Complete(l.Ref(), at(4))
	must(t, err)
	if !out.VideoCompleted {
		t.Fatal("video not completed after finalize")
	}
	st, err := s.VideoStatus("v1")
	must(t, err)
	if st.State != VideoCompleted || st.Percent != 100 {
		t.Fatalf("status %+v", st)
	}
	must(t, s.Forget("v1"))
	if _, err := s.VideoStatus("v1"); !errors.Is(err, ErrUnknownVideo) {
		t.Fatalf("after forget: %v", err)
	}
	must(t, checkInvariants(s))
}

func TestAutoFlowAddScenes(t *testing.T) {
	s := newState(t, Config{})
	must(t, s.UpsertNode(gpuNode("n1", 2, 48, "wan"), at(0)))
	must(t, s.Submit(AutoGraph(VideoInfo{ID: "v1", AccountID: "a"}), at(0)))

	if err := s.AddScenes("v1", 2, gpuReq("wan", 1, 40), at(0)); !errors.Is(err, ErrWrongState) {
		t.Fatalf("AddScenes before plan: %v", err)
	}
	plan := mustPlace(t, s, "n1", at(1))
	if plan.TaskID != "v1/plan" {
		t.Fatalf("first task %s", plan.TaskID)
	}
	out, err := s.Complete(plan.Ref(), at(2))
	must(t, err)
	if !out.NeedsScenes {
		t.Fatal("plan completion did not ask for scenes")
	}
	must(t, s.AddScenes("v1", 3, gpuReq("wan", 1, 40), at(2)))
	if err := s.AddScenes("v1", 3, gpuReq("wan", 1, 40), at(2)); !errors.Is(err, ErrWrongState) {
		t.Fatalf("AddScenes twice: %v", err)
	}
	// tts + 3 scenes are ready; the node has 2 GPUs and 8 CPU slots.
	var leases []Lease
	for {
		l, err := s.Place("n1", at(3), leaseDur)
		if errors.Is(err, ErrNoWork) {
			break
		}
		must(t, err)
		leases = append(leases, l)
	}
	if len(leases) != 3 { // tts + 2 scenes (third scene waits for a GPU)
		t.Fatalf("placed %d, want 3: %+v", len(leases), leases)
	}
	comp, _ := s.Task("v1/composite")
	if comp.State != TaskBlocked {
		t.Fatalf("composite %s before scenes are done", comp.State)
	}
	done := 0
	for len(leases) > 0 {
		l := leases[0]
		leases = leases[1:]
		out, err := s.Complete(l.Ref(), at(4+done))
		must(t, err)
		done++
		if out.VideoCompleted {
			if l.TaskID != "v1/composite" {
				t.Fatalf("video completed by %s", l.TaskID)
			}
			break
		}
		for {
			nl, err := s.Place("n1", at(4+done), leaseDur)
			if errors.Is(err, ErrNoWork) {
				break
			}
			must(t, err)
			leases = append(leases, nl)
		}
		must(t, checkInvariants(s))
	}
	st, _ := s.VideoStatus("v1")
	if st.State != VideoCompleted || st.TasksTotal != 6 || st.TasksDone != 6 {
		t.Fatalf("final status %+v", st)
	}
}

func TestPercentWeighted(t *testing.T) {
	s := newState(t, Config{})
	must(t, s.UpsertNode(gpuNode("n1", 4, 48, "wan"), at(0)))
	must(t, s.Submit(AutoGraph(VideoInfo{ID: "v1", AccountID: "a"}), at(0)))
	plan := mustPlace(t, s, "n1", at(1))
	must(t, s.Progress(plan.Ref(), 50))
	st, _ := s.VideoStatus("v1")
	if st.Percent != 5 { // plan weighs 10 of 100 (scene share reserved)
		t.Fatalf("percent %d, want 5", st.Percent)
	}
	_, err := s.Complete(plan.Ref(), at(2))
	must(t, err)
	st, _ = s.VideoStatus("v1")
	if st.Percent != 10 {
		t.Fatalf("percent %d, want 10", st.Percent)
	}
	must(t, s.AddScenes("v1", 4, gpuReq("wan", 1, 40), at(2)))
	st, _ = s.VideoStatus("v1")
	if st.Percent != 10 {
		t.Fatalf("percent after AddScenes %d, want 10 (must not move)", st.Percent)
	}
	for range 2 {
		l := mustPlace(t, s, "n1", at(3))
		if l.Kind == KindScene {
			must(t, s.Progress(l.Ref(), 100))
		}
	}
	st, _ = s.VideoStatus("v1")
	// tts (if leased) at 0, one or two scenes at 100%: 10 + 15 [+15]
	if st.Percent != 25 && st.Percent != 40 {
		t.Fatalf("percent %d", st.Percent)
	}
	if err := s.Progress(plan.Ref(), 10); !isStale(err) {
		t.Fatalf("progress on a finished lease: %v", err)
	}
}

// TestDoneShare checks the share a cancel charges for: finished tasks by
// weight, a running task's progress not counted.
func TestDoneShare(t *testing.T) {
	s := newState(t, Config{})
	must(t, s.UpsertNode(gpuNode("n1", 4, 48, "wan"), at(0)))
	must(t, s.Submit(AutoGraph(VideoInfo{ID: "v1", AccountID: "a"}), at(0)))
	share := func(want float64) {
		t.Helper()
		got, err := s.DoneShare("v1")
		must(t, err)
		if math.Abs(got-want) > 1e-9 {
			t.Fatalf("done share %v, want %v", got, want)
		}
	}
	share(0)
	plan := mustPlace(t, s, "n1", at(1))
	must(t, s.Progress(plan.Ref(), 90))
	share(0) // running work is not charged
	_, err := s.Complete(plan.Ref(), at(2))
	must(t, err)
	share(0.10) // plan weighs 10 of 100, the scenes' share reserved
	must(t, s.AddScenes("v1", 4, gpuReq("wan", 1, 40), at(2)))
	for range 6 {
		l, err := s.Place("n1", at(3), leaseDur)
		if errors.Is(err, ErrNoWork) {
			break
		}
		must(t, err)
		if l.Kind == KindScene {
			_, err := s.Complete(l.Ref(), at(4))
			must(t, err)
		}
	}
	// plan, and every scene (15 each of 60 for four), tts still leased.
	share(0.70)
	if _, err := s.DoneShare("nope"); err == nil {
		t.Fatal("done share of an unknown video: no error")
	}
}

// TestVideoStages follows an auto and a manual video through their stages.
func TestVideoStages(t *testing.T) {
	s := newState(t, Config{})
	must(t, s.UpsertNode(gpuNode("n1", 8, 48, "wan"), at(0)))
	stage := func(id, want string, done, total int) {
		t.Helper()
		st, err := s.VideoStatus(id)
		must(t, err)
		if st.Stage != want || st.ScenesDone != done || st.ScenesTotal != total {
			t.Fatalf("%s: stage %q %d/%d, want %q %d/%d", id, st.Stage, st.ScenesDone, st.ScenesTotal, want, done, total)
		}
	}
	complete := func(l Lease) {
		t.Helper()
		_, err := s.Complete(l.Ref(), at(5))
		must(t, err)
	}
	must(t, s.Submit(AutoGraph(VideoInfo{ID: "auto", AccountID: "a"}), at(0)))
	stage("auto", "", 0, 0) // queued
	plan := mustPlace(t, s, "n1", at(1))
	stage("auto", StagePlanning, 0, 0)
	complete(plan)
	must(t, s.AddScenes("auto", 2, gpuReq("wan", 1, 40), at(2)))
	leases := map[Kind][]Lease{}
	for range 3 {
		l := mustPlace(t, s, "n1", at(3))
		leases[l.Kind] = append(leases[l.Kind], l)
	}
	if len(leases[KindTTS]) != 1 || len(leases[KindScene]) != 2 {
		t.Fatalf("leases %v", leases)
	}
	stage("auto", StageRenderingScenes, 0, 2)
	complete(leases[KindScene][0])
	stage("auto", StageRenderingScenes, 1, 2)
	complete(leases[KindScene][1])
	stage("auto", StageVoicing, 2, 2)
	complete(leases[KindTTS][0])
	stage("auto", StageCompositing, 2, 2)

	must(t, s.Submit(ManualGraph(VideoInfo{ID: "man", AccountID: "b"}, gpuReq("wan", 1, 40)), at(6)))
	render := mustPlace(t, s, "n1", at(7))
	if render.VideoID != "man" {
		render = mustPlace(t, s, "n1", at(7))
	}
	stage("man", StageRendering, 0, 0)
	complete(render)
	stage("man", StageFinalizing, 0, 0)
}

// TestAddScenesListsApart: the three lists that grow by the scenes are
// carved from one block (PreparedScenes.room); filling each to its
// capacity must leave the other two as they were.
func TestAddScenesListsApart(t *testing.T) {
	for _, n := range []int{0, 1, 3, 40} {
		s := newState(t, Config{})
		must(t, s.UpsertNode(gpuNode("n1", 2, 48, "wan"), at(0)))
		must(t, s.Submit(AutoGraph(VideoInfo{ID: "v1", AccountID: "a"}), at(0)))
		plan := mustPlace(t, s, "n1", at(1))
		_, err := s.Complete(plan.Ref(), at(2))
		must(t, err)
		must(t, s.AddScenes("v1", n, gpuReq("wan", 1, 40), at(2)))
		v := s.videos["v1"]
		lists := []*[]*task{&v.tasks, &v.plan.after, &v.gate.deps}
		scenes := v.tasks[3:]
		tts := v.tasks[1]
		wantLists := [][]*task{
			append([]*task{v.plan, tts, v.gate}, scenes...),
			append([]*task{tts}, scenes...),
			append([]*task{tts}, scenes...),
		}
		if len(scenes) != n || tts.name() != NameTTS || v.gate.name() != NameComposite {
			t.Fatalf("n %d: tasks %d, second %s, gate %s", n, len(v.tasks), tts.name(), v.gate.name())
		}
		for i, l := range lists {
			if !slices.Equal(*l, wantLists[i]) {
				t.Fatalf("n %d: list %d holds the wrong tasks", n, i)
			}
		}
		for i, sc := range scenes {
			if sc.name() != sceneName(i+1) {
				t.Fatalf("n %d: scene %d is %s", n, i, sc.name())
			}
		}
		var before [][]*task
		for _, l := range lists {
			before = append(before, slices.Clone(*l))
		}
		for i, l := range lists {
			full := *l
			for len(full) < cap(full) {
				full = append(full, nil)
			}
			for j, o := range lists {
				if j != i && !slices.Equal(*o, before[j]) {
					t.Fatalf("n %d: filling list %d changed list %d", n, i, j)
				}
			}
		}
	}
}
