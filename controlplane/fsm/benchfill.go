package fsm

import "fmt"

// BenchFill adds Count completed videos to an account in one step: the fast
// way for a benchmark to give the state millions of videos of history. Each
// is stored as a rendered video is (the same record, lists and counts, on
// disk after the next checkpoint) but nothing is rendered, charged or
// announced. Only a server started with --bench-fill proposes it; the
// leader picks IDPrefix at random, and ids are IDPrefix and a ten-digit
// number from First, in order.
type BenchFill struct {
	AccountID string `msgpack:"account"`
	IDPrefix  string `msgpack:"prefix"`
	First     int64  `msgpack:"first"`
	Count     int    `msgpack:"count"`
	Now       int64  `msgpack:"now"`
}

// MaxBenchFill bounds one BenchFill: the videos sit in memory until the next
// checkpoint.
const MaxBenchFill = 100_000

func (*BenchFill) Type() MessageType { return BenchFillType }

func (s *state) applyBenchFill(c *BenchFill) (int, error) {
	if _, ok := s.accounts[c.AccountID]; !ok {
		return 0, fmt.Errorf("bench fill for %s: %w", c.AccountID, ErrAccountNotFound)
	}
	if c.Count < 1 || c.Count > MaxBenchFill || c.First < 0 || c.IDPrefix == "" {
		return 0, fmt.Errorf("%w: bench fill of %d videos from %d with prefix %q: want 1..%d, a prefix and First ≥ 0",
			ErrInvalidCommand, c.Count, c.First, c.IDPrefix, MaxBenchFill)
	}
	id := func(i int) string { return fmt.Sprintf("%s%010d", c.IDPrefix, c.First+int64(i)) }
	for _, i := range []int{0, c.Count - 1} {
		if _, _, dup := s.lookupVideo(id(i)); dup {
			return 0, fmt.Errorf("%w: bench fill: video %s exists", ErrInvalidCommand, id(i))
		}
	}
	for i := range c.Count {
		vid := id(i)
		final := artifactPrefix(vid, "composite")
		s.addVideo(&Video{
			ID: vid, AccountID: c.AccountID, Status: StatusCompleted, Percent: 100,
			Spec: Spec{Mode: ModeManual, Prompt: "bench fill", Model: "wan-2.2-a14b", Operation: "text_to_video",
				Resolution: "720p", AspectRatio: "16:9", DurationSeconds: 5},
			Outputs:   Outputs{Video: final + "video.mp4", Poster: final + "poster.jpg"},
			Artifacts: map[string]string{"composite/video.mp4": final + "video.mp4", "composite/poster.jpg": final + "poster.jpg"},
			CreatedAt: c.Now, UpdatedAt: c.Now, StartedAt: c.Now, FinishedAt: c.Now,
		})
	}
	return c.Count, nil
}
