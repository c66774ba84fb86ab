package fsm

import (
	"fmt"
	"slices"

	"github.com/vmihailenco/msgpack/v5"
)

// appBridgeRecord is the bridge's scalar state in a snapshot.
type appBridgeRecord struct {
	On      bool        `msgpack:"on"`
	Inbound InboundMark `msgpack:"inbound"`
	Refused []Refusal   `msgpack:"refused"`
	// Index is the last log index applied (outside Raft: the command count), so a
	// restored replica keys its next movements as the original would.
	Index uint64 `msgpack:"index"`
}

// appRecords copies the bridge's state and (unless hotOnly: they are tables, a
// checkpoint writes them one per key) its ledger and events in log order and
// debits by account and key, so replicas write the same bytes.
func (s *state) appRecords(hotOnly bool) []record {
	out := []record{{recAppBridge, appBridgeRecord{On: s.out.on, Inbound: s.in.mark, Refused: slices.Clone(s.in.refused), Index: s.out.index}}}
	if !hotOnly {
		out = append(out, record{recTable, s.appLedger.snapshot(recLedger, "")},
			record{recTable, s.appEvents.snapshot(recVideoEvent, "")},
			record{recTable, s.debits.snapshot(recDebit, "")})
	}
	return out
}

func (s *state) restoreAppRecord(t recordType, body []byte) error {
	switch t {
	case recAppBridge:
		r, err := decodeRecord[appBridgeRecord](body, "app bridge")
		s.out.on, s.in.mark, s.in.refused, s.out.index = r.On, r.Inbound, r.Refused, max(s.out.index, r.Index)
		return err
	case recLedger:
		e, err := decodeRecord[LedgerEntry](body, "ledger entry")
		s.appLedger.restore(outboxKey(e.Index, e.Seq), &e)
		s.out.index = max(s.out.index, e.Index)
		return err
	case recVideoEvent:
		e, err := decodeRecord[VideoEvent](body, "video event")
		s.appEvents.restore(outboxKey(e.Index, e.Seq), &e)
		s.out.index = max(s.out.index, e.Index)
		return err
	case recDebit:
		d, err := decodeRecord[Debit](body, "debit")
		s.debits.restore(idemID(d.AccountID, d.Key), &d)
		return err
	}
	return fmt.Errorf("unknown snapshot record type %d", t)
}

// decodeRecord decodes one record's body; on error the restore is abandoned, so
// what was half-set does not matter.
func decodeRecord[T any](body []byte, what string) (T, error) {
	var v T
	if err := msgpack.Unmarshal(body, &v); err != nil {
		return v, fmt.Errorf("decode %s: %w", what, err)
	}
	return v, nil
}
