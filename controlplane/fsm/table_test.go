package fsm_test

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/vmihailenco/msgpack/v5"
	"go.etcd.io/bbolt"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// pair applies the same log to an FSM in memory and one with a state file.
type pair struct {
	t     *testing.T
	path  string
	mem   *fsm.FSM
	disk  *fsm.FSM
	index uint64
}

func newPair(t *testing.T) *pair {
	p := &pair{t: t, path: filepath.Join(t.TempDir(), "state.db"), mem: fsm.New()}
	p.open()
	t.Cleanup(func() { p.disk.Close() })
	return p
}

func (p *pair) open() {
	p.t.Helper()
	var err error
	if p.disk, err = fsm.Open(p.path); err != nil {
		p.t.Fatal(err)
	}
}

// restart closes the state file and opens it again, as a node's restart
// does.
func (p *pair) restart() {
	p.t.Helper()
	if err := p.disk.Close(); err != nil {
		p.t.Fatal(err)
	}
	p.open()
}

// apply applies c to both and checks they answer alike.
func (p *pair) apply(c fsm.Command) any {
	p.t.Helper()
	p.index++
	data, err := fsm.Encode(c)
	if err != nil {
		p.t.Fatal(err)
	}
	var answers [2]*fsm.Result
	for i, f := range []*fsm.FSM{p.mem, p.disk} {
		answers[i] = f.Apply(&raft.Log{Index: p.index, Term: 1, Type: raft.LogCommand, Data: data}).(*fsm.Result)
		if answers[i].Err != nil {
			p.t.Fatalf("%s: %v", c.Type(), answers[i].Err)
		}
	}
	if !reflect.DeepEqual(answers[0].Value, answers[1].Value) {
		p.t.Fatalf("%s: the state file answers %+v, memory %+v", c.Type(), answers[1].Value, answers[0].Value)
	}
	return answers[0].Value
}

// refuse applies c to both as a log entry and checks both refuse it with want.
func (p *pair) refuse(c fsm.Command, want error) {
	p.t.Helper()
	p.index++
	data, err := fsm.Encode(c)
	if err != nil {
		p.t.Fatal(err)
	}
	for _, f := range []*fsm.FSM{p.mem, p.disk} {
		res := f.Apply(&raft.Log{Index: p.index, Term: 1, Type: raft.LogCommand, Data: data}).(*fsm.Result)
		if !errors.Is(res.Err, want) {
			p.t.Fatalf("%s: %v, want %v", c.Type(), res.Err, want)
		}
	}
}

// same checks that both write the same snapshot; the disk one checkpoints.
func (p *pair) same(when string) {
	p.t.Helper()
	if !bytes.Equal(snapshotBytes(p.t, p.mem), snapshotBytes(p.t, p.disk)) {
		p.t.Fatalf("%s: the state file's snapshot differs from memory's", when)
	}
}

func (p *pair) inMemory() map[string]int { return p.disk.TierStats().TableMemory }

// TestTablesServeFromFile checks that idempotency records, webhook events
// and finished deliveries leave memory at a checkpoint and are then served
// from the state file: replays, reads, expiry and pruning answer as in a
// state that never left memory.
func TestTablesServeFromFile(t *testing.T) {
	p := newPair(t)
	now := t0
	p.apply(&fsm.CreateAccount{AccountID: "a", Name: "a", Plan: fsm.PlanPro, Credits: 1000, KeyID: "k", KeyHash: keyHash("k"), KeyHint: "k", Now: now})
	p.apply(&fsm.CreateWebhook{WebhookID: "whk_1", AccountID: "a", URL: "https://h.example/1", Events: []string{fsm.EventVideoFailed}, Secret: "whsec_1", Now: now})
	const videos, failed, delivered, debits = 60, 40, 25, 5
	for i := range debits {
		p.apply(&fsm.DebitCredits{AccountID: "a", Amount: 2, Key: fmt.Sprintf("debit-%d", i), Now: now})
	}
	for i := range videos {
		p.apply(createVideo(fmt.Sprintf("vid_%02d", i), "a", 1, fmt.Sprintf("key-%02d", i), "body", now))
	}
	for i := range failed {
		p.apply(&fsm.FailVideo{VideoID: fmt.Sprintf("vid_%02d", i), Reason: "operator", Now: now + 1})
	}
	for i := range delivered {
		p.apply(&fsm.RecordDelivery{EventID: fsm.EventID(fmt.Sprintf("vid_%02d", i)), WebhookID: "whk_1", At: now + 2, Status: 200, LatencyMS: 3})
	}
	if got := p.inMemory(); got["idempotency"] != videos || got["events"] != failed || got["deliveries"] != failed || got["app_debits"] != debits {
		t.Fatalf("before a checkpoint memory holds %v, want every record", got)
	}
	if n := len(p.pages("whk_1", 7)); n != failed {
		t.Fatalf("%d deliveries listed before a checkpoint, want %d", n, failed)
	}
	p.same("first checkpoint")
	if n := len(p.pages("whk_1", 7)); n != failed {
		t.Fatalf("%d deliveries listed from the file, want %d", n, failed)
	}
	want := map[string]int{"idempotency": 0, "events": 0, "deliveries": failed - delivered, "app_debits": 0, "keyed_grants": 0, "keyed_account_creates": 0, "event_log": 0, "app_ledger": 0, "app_events": 0}
	if got := p.inMemory(); !reflect.DeepEqual(got, want) {
		t.Fatalf("after a checkpoint memory holds %v, want %v (only the pending deliveries)", got, want)
	}
	if st := p.disk.Stats(); st.Idempotency != videos || st.Events != failed || st.Deliveries != failed {
		t.Fatalf("counts %+v, want %d idempotency records, %d events and deliveries", st, videos, failed)
	}

	// Served from the file: a replay, the reads, and a restart.
	replay := p.apply(createVideo("vid_new", "a", 1, "key-07", "body", now+3)).(fsm.CreateVideoResult)
	if !replay.Replayed || replay.Video.ID != "vid_07" {
		t.Fatalf("replay from the file answered %+v", replay)
	}
	if d := p.apply(&fsm.DebitCredits{AccountID: "a", Amount: 2, Key: "debit-3", Now: now + 3}).(fsm.DebitResult); !d.Replayed {
		t.Fatalf("a debit replayed from the file answered %+v", d)
	}
	body := createVideo("", "", 0, "", "body", 0).BodyHash
	if !p.disk.IdempotencyReplays("a", "key-50", body, now+3) || p.disk.IdempotencyReplays("a", "key-50", [32]byte{1}, now+3) {
		t.Fatal("IdempotencyReplays from the file: want true for the same body only")
	}
	for _, id := range []string{fsm.EventID("vid_03"), fsm.EventID("vid_33"), "evt_none"} {
		e1, ok1 := p.disk.Event(id)
		e2, ok2 := p.mem.Event(id)
		if ok1 != ok2 || !reflect.DeepEqual(e1, e2) {
			t.Fatalf("event %s: file %v %+v, memory %v %+v", id, ok1, e1, ok2, e2)
		}
	}
	for _, q := range []fsm.DeliveryFilter{{}, {EventID: fsm.EventID("vid_03")}, {State: fsm.DeliveryPending}, {Limit: 5}} {
		if got, want := p.disk.Deliveries(q), p.mem.Deliveries(q); !reflect.DeepEqual(got, want) {
			t.Fatalf("deliveries %+v: file %d, memory %d", q, len(got), len(want))
		}
	}
	if got, want := p.disk.DueDeliveries(now+10, 100, fsm.DueOptions{}), p.mem.DueDeliveries(now+10, 100, fsm.DueOptions{}); len(got) != failed-delivered || !reflect.DeepEqual(got, want) {
		t.Fatalf("due deliveries: file %d, memory %d, want %d", len(got), len(want), failed-delivered)
	}
	p.same("after replays")
	p.restart()
	if got := p.inMemory(); !reflect.DeepEqual(got, want) {
		t.Fatalf("after a restart memory holds %v, want %v", got, want)
	}
	p.same("after a restart")
	p.pages("whk_1", 3)

	// Expiry and pruning read the time indexes; deletions stay in memory,
	// as tombstones, until the next checkpoint writes them.
	if n := p.apply(&fsm.ExpireIdempotency{Before: now + 1}).(int); n != videos+debits {
		t.Fatalf("expired %d idempotency records and debits, want %d", n, videos+debits)
	}
	if got := p.inMemory()["idempotency"]; got != videos {
		t.Fatalf("%d idempotency records in memory after expiry, want %d tombstones", got, videos)
	}
	if n := p.apply(&fsm.PruneDeliveries{Before: now + 3}).(int); n != delivered {
		t.Fatalf("pruned %d deliveries, want %d", n, delivered)
	}
	if n := len(p.pages("whk_1", 4)); n != failed-delivered {
		t.Fatalf("%d deliveries listed after pruning (tombstones in memory), want %d", n, failed-delivered)
	}
	p.same("after expiry and pruning")
	if n := len(p.pages("whk_1", 4)); n != failed-delivered {
		t.Fatalf("%d deliveries listed after pruning was written, want %d", n, failed-delivered)
	}
	want = map[string]int{"idempotency": 0, "events": 0, "deliveries": failed - delivered, "app_debits": 0, "keyed_grants": 0, "keyed_account_creates": 0, "event_log": 0, "app_ledger": 0, "app_events": 0}
	if got := p.inMemory(); !reflect.DeepEqual(got, want) {
		t.Fatalf("after the checkpoint memory holds %v, want %v", got, want)
	}
	if st := p.disk.Stats(); st.Idempotency != 0 || st.Events != failed-delivered || st.Deliveries != failed-delivered {
		t.Fatalf("counts after expiry and pruning %+v", st)
	}
	fresh := p.apply(createVideo("vid_again", "a", 1, "key-07", "body", now+4)).(fsm.CreateVideoResult)
	if fresh.Replayed {
		t.Fatal("an expired key replayed from the file")
	}
	p.same("after reusing an expired key")
}

// TestStoreUpgradesV2 opens a state file written before the tables kept
// index buckets and counts (format v2): opening it builds the indexes, so
// pending deliveries are found, expiry reads the time index and the counts
// are right.
func TestStoreUpgradesV2(t *testing.T) {
	p := newPair(t)
	now := t0
	p.apply(&fsm.CreateAccount{AccountID: "a", Name: "a", Plan: fsm.PlanPro, Credits: 100, KeyID: "k", KeyHash: keyHash("k"), KeyHint: "k", Now: now})
	p.apply(&fsm.CreateWebhook{WebhookID: "whk_1", AccountID: "a", URL: "https://h.example/1", Events: []string{fsm.EventVideoFailed}, Secret: "whsec_1", Now: now})
	for i := range 4 {
		p.apply(createVideo(fmt.Sprintf("vid_%d", i), "a", 1, fmt.Sprintf("key-%d", i), "body", now))
		p.apply(&fsm.FailVideo{VideoID: fmt.Sprintf("vid_%d", i), Reason: "operator", Now: now})
	}
	p.apply(&fsm.RecordDelivery{EventID: fsm.EventID("vid_0"), WebhookID: "whk_1", At: now + 1, Status: 200})
	p.same("written")
	if err := p.disk.Close(); err != nil {
		t.Fatal(err)
	}
	downgradeToV2(t, p.path)
	p.open()
	if st := p.disk.Stats(); st.Idempotency != 4 || st.Events != 4 || st.Deliveries != 4 {
		t.Fatalf("counts of an upgraded file %+v, want 4 of each", st)
	}
	if got := len(p.disk.DueDeliveries(now+1, 10, fsm.DueOptions{})); got != 3 {
		t.Fatalf("%d pending deliveries found in an upgraded file, want 3", got)
	}
	if n := p.apply(&fsm.ExpireIdempotency{Before: now + 1}).(int); n != 4 {
		t.Fatalf("expired %d records of an upgraded file, want 4", n)
	}
	p.same("upgraded")
}

// downgradeToV2 makes the file at path as format v2 wrote it: no index
// buckets, no table counts.
func downgradeToV2(t *testing.T, path string) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bbolt.Tx) error {
		for _, b := range []string{"hot_idem_by_time", "hot_idem_hot", "hot_events_by_time", "hot_events_hot", "hot_deliveries_by_time", "hot_deliveries_hot", "hot_debits", "hot_debits_by_time", "hot_debits_hot"} {
			if err := tx.DeleteBucket([]byte(b)); err != nil {
				return fmt.Errorf("delete %s: %w", b, err)
			}
		}
		meta := tx.Bucket([]byte("meta"))
		var extra map[string]any
		if err := msgpack.Unmarshal(meta.Get([]byte("extra")), &extra); err != nil {
			return err
		}
		if _, ok := extra["tables"]; !ok {
			return fmt.Errorf("the extra record has no table counts: %v", extra)
		}
		delete(extra, "tables")
		b, err := msgpack.Marshal(extra)
		if err != nil {
			return err
		}
		if err := meta.Put([]byte("extra"), b); err != nil {
			return err
		}
		return meta.Put([]byte("format"), []byte("vidfarm-state-v2"))
	})
	if err != nil {
		t.Fatal(err)
	}
}

// pages walks every page of the endpoint's deliveries on both FSMs, limit
// at a time, checks they are the same and newest first, and returns them.
func (p *pair) pages(webhookID string, limit int) []fsm.EndpointDelivery {
	p.t.Helper()
	var all []fsm.EndpointDelivery
	after := ""
	for {
		got, err1 := p.disk.WebhookDeliveries("a", webhookID, after, limit)
		want, err2 := p.mem.WebhookDeliveries("a", webhookID, after, limit)
		if err1 != nil || err2 != nil || !reflect.DeepEqual(got, want) {
			p.t.Fatalf("deliveries of %s after %q: file %d %v %v, memory %d %v %v", webhookID, after,
				len(got.Deliveries), got.HasMore, err1, len(want.Deliveries), want.HasMore, err2)
		}
		all = append(all, got.Deliveries...)
		if !got.HasMore {
			break
		}
		after = got.Deliveries[len(got.Deliveries)-1].ID()
	}
	for i := 1; i < len(all); i++ {
		a, b := all[i-1], all[i]
		if a.CreatedAt < b.CreatedAt || (a.CreatedAt == b.CreatedAt && a.ID() < b.ID()) {
			p.t.Fatalf("delivery %d (%s at %d) comes before %s at %d: not newest first", i, a.ID(), a.CreatedAt, b.ID(), b.CreatedAt)
		}
	}
	return all
}

// TestDeliveriesByEndpoint lists each endpoint's deliveries, made at
// different times and spread over both tiers, page by page.
func TestDeliveriesByEndpoint(t *testing.T) {
	p := newPair(t)
	now := t0
	p.apply(&fsm.CreateAccount{AccountID: "a", Name: "a", Plan: fsm.PlanPro, Credits: 1000, KeyID: "k", KeyHash: keyHash("k"), KeyHint: "k", Now: now})
	p.apply(&fsm.CreateAccount{AccountID: "b", Name: "b", Plan: fsm.PlanPro, Credits: 1000, KeyID: "kb", KeyHash: keyHash("kb"), KeyHint: "k", Now: now})
	p.apply(&fsm.CreateWebhook{WebhookID: "whk_1", AccountID: "a", URL: "https://h.example/1", Events: []string{fsm.EventVideoFailed}, Secret: "whsec_1", Now: now})
	p.apply(&fsm.CreateWebhook{WebhookID: "whk_2", AccountID: "a", URL: "https://h.example/2", Events: fsm.EventTypes, Secret: "whsec_2", Now: now})
	for i := range 30 {
		id := fmt.Sprintf("vid_%02d", i)
		p.apply(createVideo(id, "a", 1, "", "", now))
		at := now + int64((i*7)%30)*1e9 // creation times out of id order
		if i%3 == 0 {
			p.apply(&fsm.CancelVideo{VideoID: id, AccountID: "a", Now: at}) // whk_2 only
		} else {
			p.apply(&fsm.FailVideo{VideoID: id, Reason: "r", Now: at})
		}
		if i%4 == 0 && i%3 != 0 {
			p.apply(&fsm.RecordDelivery{EventID: fsm.EventID(id), WebhookID: "whk_1", At: at + 1, Status: 200})
		}
		if i == 15 {
			p.same("halfway")
		}
	}
	if n := len(p.pages("whk_1", 4)); n != 20 {
		t.Fatalf("whk_1 lists %d deliveries, want 20 (the failed videos)", n)
	}
	if n := len(p.pages("whk_2", 6)); n != 30 {
		t.Fatalf("whk_2 lists %d deliveries, want 30", n)
	}
	p.same("the end")
	p.pages("whk_1", 4)
	p.pages("whk_2", 1)
	if _, err := p.disk.WebhookDeliveries("b", "whk_1", "", 10); !errors.Is(err, fsm.ErrWebhookNotFound) {
		t.Fatalf("another account's endpoint: %v", err)
	}
	other := p.pages("whk_2", 100)[0].ID()
	if _, err := p.disk.WebhookDeliveries("a", "whk_1", other, 10); !errors.Is(err, fsm.ErrDeliveryNotFound) {
		t.Fatalf("a cursor from another endpoint: %v", err)
	}

	// A delivered delivery, now only in the file, is retried: pending and
	// due again, its attempt kept; acknowledged, it is delivered again.
	id := fsm.EventID("vid_04") + ".whk_1"
	later := now + 100e9
	d := p.apply(&fsm.RetryDelivery{AccountID: "a", WebhookID: "whk_1", DeliveryID: id, Now: later}).(fsm.Delivery)
	if d.State != fsm.DeliveryPending || len(d.Attempts) != 1 || d.NextAt != later || d.FinishedAt != 0 {
		t.Fatalf("retried delivery %+v", d)
	}
	if again := p.apply(&fsm.RetryDelivery{AccountID: "a", WebhookID: "whk_1", DeliveryID: id, Now: later + 1}).(fsm.Delivery); !reflect.DeepEqual(again, d) {
		t.Fatalf("retrying a pending delivery changed it: %+v", again)
	}
	due := p.disk.DueDeliveries(later, 100, fsm.DueOptions{})
	if !slices.ContainsFunc(due, func(x fsm.DueDelivery) bool { return x.ID() == id && x.Event.ID == fsm.EventID("vid_04") }) {
		t.Fatalf("the retried delivery is not due: %d due", len(due))
	}
	p.same("retried")
	d = p.apply(&fsm.RecordDelivery{EventID: fsm.EventID("vid_04"), WebhookID: "whk_1", At: later + 2, Status: 200}).(fsm.Delivery)
	if d.State != fsm.DeliveryDelivered || len(d.Attempts) != 2 {
		t.Fatalf("after the retry's attempt %+v", d)
	}
	p.same("acknowledged")
	p.refuse(&fsm.RetryDelivery{AccountID: "a", WebhookID: "whk_1", DeliveryID: other, Now: later}, fsm.ErrDeliveryNotFound)
	p.refuse(&fsm.RetryDelivery{AccountID: "a", WebhookID: "whk_1", DeliveryID: "evt_none.whk_1", Now: later}, fsm.ErrDeliveryNotFound)
	p.refuse(&fsm.RetryDelivery{AccountID: "b", WebhookID: "whk_1", DeliveryID: id, Now: later}, fsm.ErrWebhookNotFound)
	p.same("delivered again")
	p.pages("whk_1", 5)
}
