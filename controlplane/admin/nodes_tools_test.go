package admin

import (
	"slices"
	"testing"
)

// TestExecutablesLeaveVoicesOut: a node's listed tools are its executables,
// not the voice:<id> tools that voice routing adds for each of its voices.
func TestExecutablesLeaveVoicesOut(t *testing.T) {
	for _, c := range []struct {
		tools, want []string
	}{
		{nil, []string{}},
		{[]string{"espeak-ng", "ffmpeg"}, []string{"espeak-ng", "ffmpeg"}},
		{[]string{"espeak-ng", "ffmpeg", "voice:af_bella", "voice:en"}, []string{"espeak-ng", "ffmpeg"}},
		{[]string{"voice:en"}, []string{}},
	} {
		if got := executables(c.tools); !slices.Equal(got, c.want) || got == nil {
			t.Errorf("executables(%v) = %#v, want %#v", c.tools, got, c.want)
		}
	}
}
