package bench

import (
	"math"
	"testing"
	"time"
)

// TestTwinRateOverTheFarmsLife: a farm younger than the window asked for
// has its videos spread over the hours since its first one, not over
// hours in which it did not exist. twinHistory's arrivals are 7,200
// videos; only the hourly counts, which say when the farm began, change.
func TestTwinRateOverTheFarmsLife(t *testing.T) {
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	busy := func(zeros, n int) []int {
		out := make([]int, zeros+n)
		for i := zeros; i < len(out); i++ {
			out[i] = 7200 / n
		}
		return out
	}
	cases := []struct {
		name      string
		hours     int // the window asked for
		hourly    []int
		wantStart time.Duration
	}{
		{"a farm up the whole window", 10, busy(0, 10), 0},
		{"first video in the 9th hour", 10, busy(8, 2), 8 * time.Hour},
		{"first video in the last hour", 10, busy(9, 1), 9 * time.Hour},
		{"a day of nothing, then two", 72, busy(24, 48), 24 * time.Hour},
		{"no hourly counts", 10, nil, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := twinHistory(t)
			h.From, h.To, h.Hourly = from, from.Add(time.Duration(tc.hours)*time.Hour), tc.hourly
			start, end := TwinWindow(h)
			if got := start.Sub(from); got != tc.wantStart || !end.Equal(h.To) {
				t.Fatalf("window from +%v to %v, want from +%v to %v", got, end, tc.wantStart, h.To)
			}
			_, wl, err := Twin(h)
			if err != nil {
				t.Fatal(err)
			}
			want := 7200 / (float64(tc.hours) - tc.wantStart.Hours())
			if got := wl.Arrival.RatePerHour; math.Abs(got-want) > 1e-9 {
				t.Fatalf("rate %v an hour, want %v", got, want)
			}
		})
	}
}
