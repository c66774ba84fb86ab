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
			b.ReportAllocs()
			applyCreates(b, f, mode.spec, t0, 10, func(int) string { return "a" })
		})
	}
}

// applyCreates applies a create of spec for each round of b's loop, as a
// follower does, from its encoded entry (at Raft index first+1 on, stamped
// from now on), for the account account(i) names; it checkpoints every 8192
// entries, outside the timing.
func applyCreates(b *testing.B, f *fsm.FSM, spec fsm.Spec, now int64, first uint64, account func(i int) string) {
	i := 0
	for b.Loop() {
		b.StopTimer()
		id := fmt.Sprintf("vid_%026d", i)
		data, err := fsm.Encode(&fsm.CreateVideo{VideoID: id, AccountID: account(i), Spec: spec, Price: 3,
			Now: now + int64(i), BodyHash: sha256.Sum256([]byte(id))})
		if err != nil {
			b.Fatal(err)
		}
		if i%8192 == 8191 {
			checkpoint(b, f)
		}
		i++
		b.StartTimer()
		if res, ok := f.Apply(&raft.Log{Index: first + uint64(i), Term: 1, Type: raft.LogCommand, Data: data}).(*fsm.Result); !ok || res.Err != nil {
			b.Fatalf("create %d: %+v", i, res)
		}
	}
}

// BenchmarkApplyCreateAccounts is BenchmarkApplyCreate's auto create with
// 1 to 5,000 accounts holding queued work, the creates spread over them. A
// create's apply places the new video in the queue (its position, stored
// with its created event), and that reckoning visits every account
// queued for the same class of task (scheduler.State.position), so its
// cost grows with the accounts waiting: a farm with a backlog spread over
// thousands of customers pays it on every replica for every create.
func BenchmarkApplyCreateAccounts(b *testing.B) {
	spec := fsm.Spec{Mode: fsm.ModeAuto, Prompt: "A thirty second tour of a solar lantern for campers", DurationSeconds: 5}
	for _, n := range []int{1, 64, 1000, 5000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			f, must := benchStore(b)
			for i := range n {
				id := fmt.Sprintf("acct%05d", i)
				must(&fsm.CreateAccount{AccountID: id, Name: id, Plan: fsm.PlanMax, Credits: 1 << 40, KeyID: "k" + id, KeyHash: keyHash("k" + id), KeyHint: "k", Now: t0})
				must(&fsm.CreateVideo{VideoID: fmt.Sprintf("vid_pre%05d", i), AccountID: id, Spec: spec, Price: 3, Now: t0 + int64(i)})
			}
			applyCreates(b, f, spec, t0+1e6, uint64(n+10), func(i int) string { return fmt.Sprintf("acct%05d", i%n) })
		})
	}
}
