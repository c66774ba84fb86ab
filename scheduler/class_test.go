package scheduler

import (
	"math"
	"slices"
	"testing"
)

// TestClassIdentity checks that the scan (same), the map key (classKeyOf)
// and the text key (key) tell requirement classes apart alike.
func TestClassIdentity(t *testing.T) {
	negZero := math.Copysign(0, -1)
	tests := []struct {
		name string
		a, b Requirements
		same bool
	}{
		{"equal GPU", gpuReq("wan", 1, 40), gpuReq("wan", 1, 40), true},
		{"memory", gpuReq("wan", 1, 40), gpuReq("wan", 1, 41), false},
		{"gpus", gpuReq("wan", 1, 40), gpuReq("wan", 2, 40), false},
		{"model", gpuReq("wan", 1, 40), gpuReq("ltx", 1, 40), false},
		{"cpu", Requirements{CPUSlots: 1}, Requirements{CPUSlots: 2}, false},
		{"zero and minus zero memory", Requirements{CPUSlots: 1}, Requirements{CPUSlots: 1, GPUMemoryGB: negZero}, false},
		{"tool order", Requirements{CPUSlots: 1, Tools: []string{"a", "b"}}, Requirements{CPUSlots: 1, Tools: []string{"b", "a", "a"}}, true},
		{"no tools", Requirements{CPUSlots: 1, Tools: []string{}}, Requirements{CPUSlots: 1}, true},
		{"one tool against two", Requirements{CPUSlots: 1, Tools: []string{`"a"|"b"`}}, Requirements{CPUSlots: 1, Tools: []string{"a", "b"}}, false},
		{"pipe in a tool", Requirements{CPUSlots: 1, Tools: []string{"a|b", "c"}}, Requirements{CPUSlots: 1, Tools: []string{"a", "b|c"}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, b := tc.a.normalized(), tc.b.normalized()
			if got := a.same(&b); got != tc.same {
				t.Errorf("same = %v, want %v", got, tc.same)
			}
			if got := classKeyOf(&a) == classKeyOf(&b); got != tc.same {
				t.Errorf("map keys equal = %v, want %v", got, tc.same)
			}
			if got := a.key() == b.key(); got != tc.same {
				t.Errorf("text keys equal = %v, want %v", got, tc.same)
			}
			// And the state gives them one class or two, past the scan too.
			for _, pad := range []int{0, maxScanClasses + 1} {
				s := newState(t, DefaultConfig())
				for i := range pad {
					s.classFor(Requirements{CPUSlots: 100 + i})
				}
				if got := s.classFor(tc.a) == s.classFor(tc.b); got != tc.same {
					t.Errorf("with %d other classes: one class = %v, want %v", pad, got, tc.same)
				}
			}
		})
	}
}

// TestRecentKeepsTheLatest checks the completion window against a plain
// slice of everything added, across the moves back to the array's start.
func TestRecentKeepsTheLatest(t *testing.T) {
	for _, adds := range []int{0, 1, recentCompletions - 1, recentCompletions, recentCompletions + 1,
		2 * recentCompletions, 2*recentCompletions + 1, 5*recentCompletions + 3} {
		var r recent
		var all []int64
		for i := range adds {
			r.add(int64(i * 7))
			all = append(all, int64(i*7))
			want := all[max(len(all)-recentCompletions, 0):]
			if got := r.values(); !slices.Equal(got, want) {
				t.Fatalf("after %d adds: window %v, want %v", i+1, got, want)
			}
		}
	}
}

// TestClassHashedMatchesClassFor: the memo finds the class classFor
// would, for normalized requirements and for unsorted tools, and keeps
// classes apart that differ in one field.
func TestClassHashedMatchesClassFor(t *testing.T) {
	reqs := []Requirements{
		{GPUs: 1, GPUMemoryGB: 8, Model: "m"},
		{GPUs: 1, GPUMemoryGB: 8, Model: "n"},
		{GPUs: 2, GPUMemoryGB: 8, Model: "m"},
		{GPUs: 1, GPUMemoryGB: 16, Model: "m"},
		{CPUSlots: 1, Tools: []string{"ffmpeg"}},
		{CPUSlots: 1, Tools: []string{"espeak-ng", "ffmpeg"}},
		{CPUSlots: 1, Tools: []string{"ffmpeg", "espeak-ng"}}, // unsorted
		{CPUSlots: 2, Tools: []string{"ffmpeg"}},
	}
	s := newState(t, Config{})
	for round := range 3 {
		for i := range reqs {
			r := reqs[i]
			got := s.classHashed(&r, reqHash(&r))
			if want := s.classFor(r); got != want {
				t.Fatalf("round %d: %+v: class %s, classFor says %s", round, r, got.key, want.key)
			}
		}
	}
	if len(s.classes) != len(reqs)-1 {
		t.Fatalf("%d classes, want %d", len(s.classes), len(reqs)-1)
	}
}
