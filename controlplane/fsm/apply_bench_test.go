package fsm_test

import (
	"crypto/sha256"
	"fmt"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// BenchmarkApplyCreate is one create's apply as a follower runs it, from
// its encoded log entry (decoding included), for each mode: the work every
// replica does on the goroutine that applies entries one at a time. The
// state has a file and is checkpointed every 8192 entries, outside the
// timing.
func BenchmarkApplyCreate(b *testing.B) {
	for _, mode := range []struct {
		name string
		spec fsm.Spec
	}{
		{"auto", fsm.Spec{Mode: fsm.ModeAuto, Prompt: "A thirty second tour of a solar lantern for campers", DurationSeconds: 5}},
		{"manual", manualSpec("A thirty second tour of a solar lantern for campers")},
	} {
		b.Run(mode.name, func(b *testing.B) {
			f, _ := benchStore(b)
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				id := fmt.Sprintf("vid_%026d", i)
				data, err := fsm.Encode(&fsm.CreateVideo{VideoID: id, AccountID: "a", Spec: mode.spec, Price: 3,
					Now: t0 + int64(i), BodyHash: sha256.Sum256([]byte(id))})
				if err != nil {
					b.Fatal(err)
				}
				if i%8192 == 8191 {
					checkpoint(b, f)
				}
				i++
				b.StartTimer()
				if res, ok := f.Apply(&raft.Log{Index: uint64(i + 10), Term: 1, Type: raft.LogCommand, Data: data}).(*fsm.Result); !ok || res.Err != nil {
					b.Fatalf("create %d: %+v", i, res)
				}
			}
		})
	}
}
