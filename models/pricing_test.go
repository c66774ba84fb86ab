package models

import (
	"math"
	"testing"
)

func TestCredits(t *testing.T) {
	tests := []struct {
		model   string
		res     string
		seconds int
		want    int
	}{
		{"kling-2.1-master", "1080p", 10, 280},
		{"kling-2.1-master", "720p", 5, 100},
		{"ltx-video-13b", "480p", 5, 5},
		{"luma-ray-2", "4k", 9, 648},
		{"sora-2-pro", "1080p", 12, 600},
		{"kling-2.1-master", "4k", 5, 0}, // not offered
		{"kling-2.1-master", "1080p", 0, 0},
		{"kling-2.1-master", "1080p", -5, 0},
	}
	for _, tt := range tests {
		m, ok := Get(tt.model)
		if !ok {
			t.Fatalf("no model %s", tt.model)
		}
		if got := m.Credits(tt.res, tt.seconds); got != tt.want {
			t.Errorf("%s.Credits(%q, %d) = %d, want %d", tt.model, tt.res, tt.seconds, got, tt.want)
		}
	}
}

func TestAutoCredits(t *testing.T) {
	tests := []struct{ seconds, want int }{
		{-5, 0},
		{0, 0},
		{1, 3},
		{4, 3},
		{AutoMinDuration, 3},
		{6, 6},
		{10, 6},
		{11, 9},
		{15, 9},
		{16, 12},
		{299, 180},
		{AutoMaxDuration, 180},
	}
	for _, tt := range tests {
		if got := AutoCredits(tt.seconds); got != tt.want {
			t.Errorf("AutoCredits(%d) = %d, want %d", tt.seconds, got, tt.want)
		}
	}
	if AutoMinDuration != 5 || AutoMaxDuration != 300 {
		t.Errorf("auto duration limits %d..%d, want 5..300", AutoMinDuration, AutoMaxDuration)
	}
}

func TestGPUSeconds(t *testing.T) {
	m, _ := Get("veo-3")
	if got := m.GPUSeconds("1080p", 8); got != 8*m.Requirements.GPUSecondsPerOutputSecond["1080p"] {
		t.Errorf("GPUSeconds(1080p, 8) = %v", got)
	}
	if got := m.GPUSeconds("4k", 8); got != 0 {
		t.Errorf("GPUSeconds(4k, 8) = %v, want 0", got)
	}
	if got := m.GPUSeconds("720p", 0); got != 0 {
		t.Errorf("GPUSeconds(720p, 0) = %v, want 0", got)
	}
}

// TestPricesCannotWrap checks that no length, however large, wraps a price to a
// small or negative one, and that every price the catalog can charge is small:
// far under the FSM's credit ceiling of 10^15.
func TestPricesCannotWrap(t *testing.T) {
	m, _ := Get("kling-2.1-master")
	for _, seconds := range []int{math.MaxInt, math.MaxInt / 28, math.MaxInt/28 + 1, 1 << 62} {
		got := m.Credits("1080p", seconds)
		if want := 28 * seconds; seconds <= math.MaxInt/28 && got != want || seconds > math.MaxInt/28 && got != math.MaxInt {
			t.Errorf("Credits(1080p, %d) = %d", seconds, got)
		}
	}
	if got, want := AutoCredits(math.MaxInt), (math.MaxInt/autoBlockSeconds+1)*autoCreditsPerBlock; got != want {
		t.Errorf("AutoCredits(MaxInt) = %d, want %d", got, want)
	}
	if got := AutoCredits(math.MinInt); got != 0 {
		t.Errorf("AutoCredits(MinInt) = %d, want 0", got)
	}
	most := AutoCredits(AutoMaxDuration)
	for _, m := range All() {
		for _, res := range m.Resolutions {
			for _, d := range m.Durations {
				most = max(most, m.Credits(res, d))
			}
		}
	}
	if most <= 0 || most >= 100_000 {
		t.Errorf("the dearest render costs %d credits, want 1 to 99,999", most)
	}
}
