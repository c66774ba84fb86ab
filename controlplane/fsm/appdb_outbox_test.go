package fsm_test

import (
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// outboxLog is a log that fills the app bridge's outbox: an opening balance,
// charges, refunds, a debit by the app and every video's events. The v3
// fixture (testdata/state-v3-outbox.db.gz) is this log checkpointed by the
// last binary of format v3, which kept the outbox in the hot stream.
func outboxLog() []fsm.Command {
	cmds := []fsm.Command{
		&fsm.CreateAccount{AccountID: "a", Name: "a", Plan: fsm.PlanPro, Credits: 100, KeyID: "k", KeyHash: keyHash("k"), KeyHint: "k", Now: t0},
		&fsm.SetAppExport{On: true, Now: t0},
	}
	for i := range 6 {
		cmds = append(cmds, createVideo(fmt.Sprintf("vid_%d", i), "a", 3, fmt.Sprintf("key-%d", i), "body", t0+int64(i)))
	}
	for i := range 3 {
		cmds = append(cmds, &fsm.FailVideo{VideoID: fmt.Sprintf("vid_%d", i), Reason: "operator", Now: t0 + 10})
	}
	return append(cmds, &fsm.DebitCredits{AccountID: "a", Amount: 7, Key: "debit", Now: t0 + 11})
}

// sameOutbox checks that both FSMs answer every read of the outbox alike, and
// that something is pending.
func (p *pair) sameOutbox(when string) {
	p.t.Helper()
	for _, after := range []uint64{0, 3, 5, p.index, ^uint64(0)} {
		for _, limit := range []int{1, 2, 100} {
			got, want := p.disk.PendingExport(after, limit), p.mem.PendingExport(after, limit)
			if !reflect.DeepEqual(got, want) {
				p.t.Fatalf("%s: PendingExport(%d, %d): file %+v, memory %+v", when, after, limit, got, want)
			}
		}
		n1, o1 := p.disk.ExportBacklog(after)
		n2, o2 := p.mem.ExportBacklog(after)
		if n1 != n2 || o1 != o2 {
			p.t.Fatalf("%s: ExportBacklog(%d): file %d %d, memory %d %d", when, after, n1, o1, n2, o2)
		}
	}
	if got, want := p.disk.AppExport(), p.mem.AppExport(); !reflect.DeepEqual(got, want) {
		p.t.Fatalf("%s: AppExport: file %+v, memory %+v", when, got, want)
	}
}

// TestAppOutboxServedFromFile checks that the outbox leaves memory at a
// checkpoint and is then served from the state file, answering as a state
// that never left memory, across a restart and a trim.
func TestAppOutboxServedFromFile(t *testing.T) {
	p := newPair(t)
	for _, c := range outboxLog() {
		p.apply(c)
	}
	st := p.mem.AppExport()
	if st.PendingLedger < 7 || st.PendingEvents < 9 || st.FirstHeld != 2 {
		t.Fatalf("the log left %+v in the outbox, want at least 7 ledger entries and 9 events from index 2 (the switch)", st)
	}
	if got := p.inMemory(); got["app_ledger"] != st.PendingLedger || got["app_events"] != st.PendingEvents {
		t.Fatalf("before a checkpoint memory holds %v, want the whole outbox", got)
	}
	p.sameOutbox("before a checkpoint")
	p.same("checkpoint")
	if got := p.inMemory(); got["app_ledger"] != 0 || got["app_events"] != 0 {
		t.Fatalf("after a checkpoint memory holds %v, want no outbox entry", got)
	}
	p.sameOutbox("from the file")
	p.restart()
	p.sameOutbox("after a restart")
	p.apply(&fsm.TrimExported{Through: 5})
	if got := p.inMemory(); got["app_ledger"]+got["app_events"] == 0 {
		t.Fatalf("a trim left no tombstone in memory: %v", got)
	}
	p.sameOutbox("after a trim")
	p.same("trimmed")
	if a := p.disk.AppExport(); a.FirstHeld != 6 {
		t.Fatalf("after trimming through 5 the first held index is %d, want 6", a.FirstHeld)
	}
	p.apply(&fsm.SetAppExport{On: false, Now: t0 + 20})
	if a := p.disk.AppExport(); a.PendingLedger != 0 || a.PendingEvents != 0 || a.FirstHeld != 0 {
		t.Fatalf("export switched off still holds %+v", a)
	}
	p.sameOutbox("switched off")
	p.same("switched off")
}

// TestStoreUpgradesV3 opens a state file written by format v3, whose hot
// stream held the outbox: it is read as before, answers as memory does, and
// the first checkpoint moves it into its tables, after which a restart
// still finds it.
func TestStoreUpgradesV3(t *testing.T) {
	p := &pair{t: t, path: filepath.Join(t.TempDir(), "state.db"), mem: fsm.New()}
	gunzip(t, "testdata/state-v3-outbox.db.gz", p.path)
	p.open()
	t.Cleanup(func() { p.disk.Close() })
	for _, c := range outboxLog() {
		p.index++
		applyOne(t, p.mem, p.index, c)
	}
	if p.disk.AppExport().PendingLedger == 0 {
		t.Fatal("the v3 file's outbox was not read")
	}
	p.sameOutbox("v3 file")
	p.same("first checkpoint")
	if got := p.inMemory(); got["app_ledger"] != 0 || got["app_events"] != 0 {
		t.Fatalf("after the first checkpoint memory holds %v, want the outbox in its tables", got)
	}
	p.restart()
	p.sameOutbox("upgraded and restarted")
	p.apply(&fsm.DebitCredits{AccountID: "a", Amount: 1, Key: "after", Now: t0 + 30})
	p.sameOutbox("written after the upgrade")
	p.same("written after the upgrade")
	// The task graphs moved to their v5 keys (by sequence number): one the
	// scheduler drops after the upgrade leaves the file too.
	p.apply(&fsm.FailVideo{VideoID: "vid_4", Reason: "operator", Now: t0 + 40})
	p.same("a task graph dropped after the upgrade")
	p.restart()
	p.same("restarted after it was dropped")
}

func gunzip(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	zr, err := gzip.NewReader(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, zr); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// applyOne applies c to f as the log entry at index and fails on an error.
func applyOne(t *testing.T, f *fsm.FSM, index uint64, c fsm.Command) {
	t.Helper()
	data, err := fsm.Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	if res := f.Apply(&raft.Log{Index: index, Term: 1, Type: raft.LogCommand, Data: data}).(*fsm.Result); res.Err != nil {
		t.Fatalf("%s: %v", c.Type(), res.Err)
	}
}
