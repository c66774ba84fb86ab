package main

import (
	"testing"

	"github.com/anishathalye/porcupine"
)

// The model accepts what a linearizable credit store may answer and refuses
// what it may not, so the chaos test's check can fail.
func TestChaosModel(t *testing.T) {
	const grant = 20
	create := func(tag int, call, ret int64, res chaosResult) porcupine.Operation {
		return porcupine.Operation{Input: chaosIn{account: "a", kind: opCreate, tag: tag, cost: 10}, Call: call, Output: chaosOut{result: res}, Return: ret}
	}
	read := func(call, ret, balance int64) porcupine.Operation {
		return porcupine.Operation{Input: chaosIn{account: "a", kind: opRead}, Call: call, Output: chaosOut{balance: balance}, Return: ret}
	}
	refund := func(tag int, call int64) porcupine.Operation {
		return porcupine.Operation{Input: chaosIn{account: "a", kind: opRefund, tag: tag, cost: 10}, Call: call, Output: chaosOut{}, Return: neverReturned}
	}
	for _, tc := range []struct {
		name    string
		history []porcupine.Operation
		want    bool
	}{
		{"sequential creates and reads", []porcupine.Operation{create(0, 0, 1, resOK), read(2, 3, 10), create(1, 4, 5, resOK), read(6, 7, 0)}, true},
		{"a read concurrent with a create sees either balance", []porcupine.Operation{create(0, 0, 10, resOK), read(1, 2, 20), read(3, 4, 10)}, true},
		{"a stale read after an acknowledged create", []porcupine.Operation{create(0, 0, 1, resOK), read(2, 3, 20)}, false},
		{"a balance going back up without a refund", []porcupine.Operation{create(0, 0, 1, resOK), read(2, 3, 10), read(4, 5, 20)}, false},
		{"a refund after a create", []porcupine.Operation{create(0, 0, 1, resOK), read(2, 3, 10), refund(0, 0), read(4, 5, 20)}, true},
		{"an idempotent replay charges once", []porcupine.Operation{create(0, 0, 1, resOK), create(0, 2, 3, resOK), read(4, 5, 10)}, true},
		{"a replay that charged twice", []porcupine.Operation{create(0, 0, 1, resOK), create(0, 2, 3, resOK), read(4, 5, 0)}, false},
		{"an ambiguous create that took effect", []porcupine.Operation{create(0, 0, neverReturned, resUnknown), read(2, 3, 10)}, true},
		{"an ambiguous create that did not", []porcupine.Operation{create(0, 0, neverReturned, resUnknown), read(2, 3, 20)}, true},
		{"an ambiguous create cannot charge twice", []porcupine.Operation{create(0, 0, neverReturned, resUnknown), read(2, 3, 0)}, false},
		{"insufficient with credits left", []porcupine.Operation{create(0, 0, 1, resInsufficient)}, false},
		{"insufficient once the credits are spent", []porcupine.Operation{create(0, 0, 1, resOK), create(1, 2, 3, resOK), create(2, 4, 5, resInsufficient), read(6, 7, 0)}, true},
		{"more acknowledged creates than credits", []porcupine.Operation{create(0, 0, 1, resOK), create(1, 0, 1, resOK), create(2, 0, 1, resOK)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := porcupine.CheckOperations(chaosModel(grant), tc.history); got != tc.want {
				t.Fatalf("linearizable = %v, want %v", got, tc.want)
			}
		})
	}
}
