package bench

import (
	"strings"
	"testing"
)

// TestVerdictOutputsSayWhatIsKnown: the text answers of a search and a
// sweep claim no more than was measured.
func TestVerdictOutputsSayWhatIsKnown(t *testing.T) {
	ci := &SweepCI{} // replicated points carry intervals
	groups := []OptimizeGroup{{Name: "h100", Max: 2}, {Name: "l40s", Max: 4}}
	for _, tc := range []struct {
		name      string
		out       string
		want, not []string
	}{
		{"a search with only uncertain fleets", OptimizeResult{Groups: groups, Uncertain: [][]int{{0, 4}}}.String(),
			[]string{"no fleet in the ranges is certain to meet every class's SLOs", "cheaper but uncertain", "h100 0, l40s 4"},
			[]string{"raise the maxima"}},
		{"a search with nothing near", OptimizeResult{Groups: groups}.String(),
			[]string{"raise the maxima"}, []string{"uncertain"}},
		{"a sweep met at its first size", SweepResult{Group: "l40s", Replications: 3, Found: true, Smallest: 3,
			Points: []SweepPoint{{Count: 3, Met: true, CI: ci}, {Count: 4, Met: true, CI: ci}}}.String(),
			[]string{"smallest l40s count certain to meet the target: 3", "the smallest size tried already meets it", "below 3"},
			[]string{"the answer is certain"}},
		{"one run met at its first size", SweepResult{Group: "l40s", Found: true, Smallest: 3,
			Points: []SweepPoint{{Count: 3, Met: true}}}.String(),
			[]string{"smallest l40s count that meets the target: 3", "the smallest size tried already meets it"}, nil},
		{"a sweep met above a size that misses", SweepResult{Group: "l40s", Replications: 3, Found: true, Smallest: 3,
			Points: []SweepPoint{{Count: 2, CI: ci}, {Count: 3, Met: true, CI: ci}}}.String(),
			[]string{"the answer is certain"}, []string{"already meets"}},
		{"a sweep by class met at its first size", SweepResult{Group: "l40s", ByClass: true, Found: true, Smallest: 1,
			Points: []SweepPoint{{Count: 1, Met: true}}}.String(),
			[]string{"smallest size tried already meets them"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, w := range tc.want {
				if !strings.Contains(tc.out, w) {
					t.Errorf("output lacks %q:\n%s", w, tc.out)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(tc.out, n) {
					t.Errorf("output says %q:\n%s", n, tc.out)
				}
			}
		})
	}
}
