package bench

import (
	"math/rand/v2"
	"testing"
)

// TestNextRoomMatchesScan: over random free counts and ready counts, the
// room sets give the node the old loop over every node would have asked
// next (the first from i on with room for a ready kind), across the
// sets' 64-node words.
func TestNextRoomMatchesScan(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	s := &sim{}
	for i := range 150 {
		s.nodes = append(s.nodes, &simNode{idx: i})
		if i>>6 == len(s.gpuRoom) {
			s.gpuRoom, s.cpuRoom = append(s.gpuRoom, 0), append(s.cpuRoom, 0)
		}
	}
	scan := func(from int) int {
		for i := from; i < len(s.nodes); i++ {
			n := s.nodes[i]
			if (s.readyGPU > 0 && n.freeGPU > 0) || (s.readyCPU > 0 && n.freeCPU > 0) {
				return i
			}
		}
		return -1
	}
	for round := range 200 {
		for _, n := range s.nodes {
			n.freeGPU, n.freeCPU = 0, 0
			if r.IntN(10) == 0 {
				n.freeGPU = 1 + r.IntN(8)
			}
			if r.IntN(3) == 0 {
				n.freeCPU = 1 + r.IntN(16)
			}
			s.roomChanged(n)
		}
		s.readyGPU, s.readyCPU = r.IntN(2), r.IntN(2)
		for from := range len(s.nodes) + 1 {
			if got, want := s.nextRoom(from), scan(from); got != want {
				t.Fatalf("round %d, from %d (ready %d GPU, %d CPU): nextRoom %d, scan %d", round, from, s.readyGPU, s.readyCPU, got, want)
			}
		}
	}
}
