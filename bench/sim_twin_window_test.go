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

// TestTwinWindowFromBegan: a history that says when the farm began (a
// server that sends Began) is read from then, to the minute, whatever the
// hourly counts; one that began before the window keeps the window.
func TestTwinWindowFromBegan(t *testing.T) {
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name      string
		began     time.Time
		wantStart time.Time
	}{
		{"began a minute before the end of an hour's window", from.Add(59 * time.Minute), from.Add(59 * time.Minute)},
		{"began before the window", from.Add(-48 * time.Hour), from},
		{"began mid-window, videos only later", from.Add(90 * time.Minute), from.Add(90 * time.Minute)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := twinHistory(t)
			h.From, h.To, h.Began = from, from.Add(10*time.Hour), tc.began
			h.Hourly = make([]int, 10)
			h.Hourly[5] = 7200 // the first video in the 6th hour
			start, end := TwinWindow(h)
			if !start.Equal(tc.wantStart) || !end.Equal(h.To) {
				t.Fatalf("window %v to %v, want %v to %v", start, end, tc.wantStart, h.To)
			}
			_, wl, err := Twin(h)
			if err != nil {
				t.Fatal(err)
			}
			if want := 7200 / h.To.Sub(tc.wantStart).Hours(); math.Abs(wl.Arrival.RatePerHour-want) > 1e-9 {
				t.Fatalf("rate %v an hour, want %v", wl.Arrival.RatePerHour, want)
			}
		})
	}
}
