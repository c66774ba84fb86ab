package models

import "math"

// Auto-mode duration limits, in seconds (inclusive).
const (
	AutoMinDuration = 5
	AutoMaxDuration = 300
)

// autoCreditsPerBlock credits are charged for every started autoBlockSeconds
// of an auto video.
const (
	autoCreditsPerBlock = 3
	autoBlockSeconds    = 5
)

// Credits is the price of a manual render of the given length at resolution:
// CreditsPerSecond[resolution] * seconds. It is 0 for a resolution m does not
// offer or a non-positive length; Validate rejects both before pricing, and
// every length it accepts prices exactly. A length whose price would not fit an
// int prices at math.MaxInt, which no balance covers, rather than wrapping to a
// small or negative price.
func (m Model) Credits(resolution string, seconds int) int {
	perSecond := m.CreditsPerSecond[resolution]
	if seconds <= 0 || perSecond <= 0 {
		return 0
	}
	if seconds > math.MaxInt/perSecond {
		return math.MaxInt
	}
	return perSecond * seconds
}

// AutoCredits is the price of an auto video: 3 credits per started 5 seconds
// (5 -> 3, 6 -> 6, 10 -> 6, 11 -> 9, 300 -> 180). It is 0 for a non-positive
// duration; the API checks AutoMinDuration..AutoMaxDuration first.
func AutoCredits(durationSeconds int) int {
	if durationSeconds <= 0 {
		return 0
	}
	// Rounded up without adding first, so no length can overflow.
	blocks := durationSeconds / autoBlockSeconds
	if durationSeconds%autoBlockSeconds != 0 {
		blocks++
	}
	return blocks * autoCreditsPerBlock
}
