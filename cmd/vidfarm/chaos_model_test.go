package main

import (
	"fmt"
	"math"

	"github.com/anishathalye/porcupine"
)

// The chaos test's linearizability model: per account, a credit balance and
// the set of create operations (tagged by a small index) that took effect.
// Creates carry a unique tag, an Idempotency-Key's retries share one, so a
// replayed 201 leaves the balance alone. Ambiguous answers (a transport error
// or a 5xx while a node dies) may or may not have taken effect; the model
// tries both.

// chaosKind is what an operation did.
type chaosKind int

const (
	opCreate chaosKind = iota
	opRead
	opRefund // a failed render's refund: lands some time after its create
)

// chaosResult is how a create ended.
type chaosResult int

const (
	resOK chaosResult = iota
	resInsufficient
	resUnknown
)

// chaosIn is an operation's input; tag < 64 indexes the account's keyed
// creates, -1 is a create without a key (never retried).
type chaosIn struct {
	account string
	kind    chaosKind
	tag     int
	cost    int64
}

// chaosOut is an operation's outcome: result for creates, balance for reads.
type chaosOut struct {
	result  chaosResult
	balance int64
}

// chaosState is comparable, so porcupine can merge equal states with ==.
type chaosState struct {
	balance int64
	applied uint64 // bit tag: that create took effect
}

// neverReturned stands for the end of an ambiguous call: it may take effect
// at any time after its start.
const neverReturned = math.MaxInt64

// chaosModel checks histories of one farm whose accounts start with grant.
func chaosModel(grant int64) porcupine.Model {
	nm := &porcupine.NondeterministicModel{
		Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
			by := map[string][]porcupine.Operation{}
			var order []string
			for _, op := range h {
				a := op.Input.(chaosIn).account
				if _, ok := by[a]; !ok {
					order = append(order, a)
				}
				by[a] = append(by[a], op)
			}
			out := make([][]porcupine.Operation, 0, len(order))
			for _, a := range order {
				out = append(out, by[a])
			}
			return out
		},
		Init: func() []any { return []any{chaosState{balance: grant}} },
		Step: func(state, input, output any) []any {
			return chaosStep(state.(chaosState), input.(chaosIn), output.(chaosOut))
		},
		Equal: func(a, b any) bool { return a == b },
		DescribeOperation: func(input, output any) string {
			in, out := input.(chaosIn), output.(chaosOut)
			switch in.kind {
			case opRead:
				return fmt.Sprintf("read → %d", out.balance)
			case opRefund:
				return fmt.Sprintf("refund #%d +%d", in.tag, in.cost)
			}
			return fmt.Sprintf("create #%d −%d → %v", in.tag, in.cost, []string{"ok", "insufficient", "unknown"}[out.result])
		},
	}
	return nm.ToModel()
}

// chaosStep is the states an operation can lead to from s (none: illegal).
func chaosStep(s chaosState, in chaosIn, out chaosOut) []any {
	var bit uint64 // a create without a key is never retried: no tag
	if in.tag >= 0 {
		bit = 1 << in.tag
	}
	switch in.kind {
	case opRead:
		if out.balance == s.balance {
			return []any{s}
		}
		return nil
	case opRefund:
		return []any{chaosState{balance: s.balance + in.cost, applied: s.applied}}
	}
	applied := s.applied&bit != 0
	charged := chaosState{balance: s.balance - in.cost, applied: s.applied | bit}
	switch out.result {
	case resOK:
		if applied {
			return []any{s} // an idempotent replay
		}
		if s.balance >= in.cost {
			return []any{charged}
		}
	case resInsufficient:
		if !applied && s.balance < in.cost {
			return []any{s}
		}
	case resUnknown:
		if applied || s.balance < in.cost {
			return []any{s}
		}
		return []any{s, charged}
	}
	return nil
}
