package models

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
// offer or a non-positive length; Validate rejects both before pricing.
func (m Model) Credits(resolution string, seconds int) int {
	if seconds <= 0 {
		return 0
	}
	return m.CreditsPerSecond[resolution] * seconds
}

// AutoCredits is the price of an auto video: 3 credits per started 5 seconds
// (5 -> 3, 6 -> 6, 10 -> 6, 11 -> 9, 300 -> 180). It is 0 for a non-positive
// duration; the API checks AutoMinDuration..AutoMaxDuration first.
func AutoCredits(durationSeconds int) int {
	if durationSeconds <= 0 {
		return 0
	}
	blocks := (durationSeconds + autoBlockSeconds - 1) / autoBlockSeconds
	return blocks * autoCreditsPerBlock
}
