package fsm

import (
	"bytes"
	"testing"

	"github.com/hashicorp/raft"
)

func heldAhead(f *FSM) int {
	f.ahead.mu.Lock()
	defer f.ahead.mu.Unlock()
	return len(f.ahead.m)
}

func applyEntry(t *testing.T, f *FSM, data []byte) {
	t.Helper()
	res, ok := f.Apply(&raft.Log{Index: f.AppliedIndex() + 1, Term: 1, Type: raft.LogCommand, Data: data}).(*Result)
	if !ok || res.Err != nil {
		t.Fatalf("apply: %+v", res)
	}
}

func encodeOrFail(t *testing.T, c Command) []byte {
	t.Helper()
	data, err := Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// predecodeHolding predecodes data, then holds held for it instead of what
// it decoded: an apply that takes the held command applies held, which
// shows it did not decode (a real proposer never swaps).
func predecodeHolding(t *testing.T, f *FSM, data []byte, held Command) (forget func()) {
	t.Helper()
	forget, err := f.Predecode(data)
	if err != nil {
		t.Fatal(err)
	}
	f.ahead.store(&data[0], decodedAhead{n: len(data), cmd: held})
	return forget
}

// The apply takes the command decoded ahead for its very entry, once; an
// entry that is another slice with the same bytes (read back from the log,
// or a follower's) is decoded, and forget drops what was never taken.
func TestPredecodedCommandIsTakenByItsEntryOnly(t *testing.T) {
	f := New()
	data := encodeOrFail(t, &CreateAccount{AccountID: "acc_entry", Plan: "pro", Now: 1})
	forget := predecodeHolding(t, f, data, &CreateAccount{AccountID: "acc_held", Plan: "pro", Now: 1})
	applyEntry(t, f, data)
	if _, ok := f.Account("acc_held"); !ok {
		t.Fatal("the apply decoded its entry instead of taking the command held for it")
	}
	if n := heldAhead(f); n != 0 {
		t.Fatalf("%d commands still held after their entry was applied", n)
	}
	forget() // after the take: nothing to drop, and no harm

	// Another slice with the same bytes is decoded, and leaves the held one.
	data2 := encodeOrFail(t, &CreateAccount{AccountID: "acc_copy", Plan: "pro", Now: 2})
	forget2 := predecodeHolding(t, f, data2, &CreateAccount{AccountID: "acc_wrong", Plan: "pro", Now: 2})
	applyEntry(t, f, bytes.Clone(data2))
	if _, ok := f.Account("acc_copy"); !ok {
		t.Fatal("a copy of the entry was not decoded")
	}
	if _, ok := f.Account("acc_wrong"); ok {
		t.Fatal("a copy of the entry took the command held for another slice")
	}
	// An unrelated entry leaves it held too.
	applyEntry(t, f, encodeOrFail(t, &CreateAccount{AccountID: "acc_other", Plan: "pro", Now: 3}))
	if n := heldAhead(f); n != 1 {
		t.Fatalf("%d commands held, want the one never applied", n)
	}
	forget2()
	if n := heldAhead(f); n != 0 {
		t.Fatalf("%d commands held after forget", n)
	}
}

// A prefix of a held entry's bytes starts at the same address: the length
// tells them apart, and the prefix is decoded (here: refused as cut).
func TestPredecodedCommandNotTakenByAPrefix(t *testing.T) {
	f := New()
	data := encodeOrFail(t, &CreateAccount{AccountID: "acc_p", Plan: "pro", Now: 1})
	forget, err := f.Predecode(data)
	if err != nil {
		t.Fatal(err)
	}
	defer forget()
	if _, err := f.decode(data[:len(data)-3]); err == nil {
		t.Fatal("a cut entry at a held entry's address decoded without error: it took the held command")
	}
}

func TestPredecodeRefusesWhatTheApplyWouldNotRead(t *testing.T) {
	f := New()
	for _, data := range [][]byte{nil, {255}, {byte(CreateAccountType), 0xc1}} {
		if _, err := f.Predecode(data); err == nil {
			t.Errorf("Predecode(%x) accepted an entry Decode refuses", data)
		}
	}
	if n := heldAhead(f); n != 0 {
		t.Fatalf("%d commands held for refused entries", n)
	}
}
