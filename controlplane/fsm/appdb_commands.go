package fsm

// Inbound tables of the app database, as AppRow.Table names them.
const (
	AppAccounts       = "accounts"
	AppPurchases      = "purchases"
	AppPlanChanges    = "plan_changes"
	AppKeys           = "api_keys"
	AppKeyRevocations = "api_key_revocations"
)

// InboundMark orders the app's rows: the writing transaction's id, then the row's
// id from the one sequence every inbound table shares.
type InboundMark struct {
	Xid uint64 `msgpack:"xid"`
	Seq int64  `msgpack:"seq"`
}

// Less reports whether m comes before o.
func (m InboundMark) Less(o InboundMark) bool {
	return m.Xid < o.Xid || (m.Xid == o.Xid && m.Seq < o.Seq)
}

// AppRows applies rows the app wrote, one after the other, in one log entry.
type AppRows struct {
	Rows []AppRow `msgpack:"rows"`
}

// AppRow is one row the app wrote. Rows are applied in InboundMark order and a row
// at or below the last applied mark is a no-op, so the bridge may send a row again
// after a crash without it counting twice. Fields the table does not use stay zero.
type AppRow struct {
	Mark       InboundMark `msgpack:"mark"`
	Table      string      `msgpack:"table"`
	AccountID  string      `msgpack:"account"`
	Name       string      `msgpack:"name,omitempty"`
	Plan       string      `msgpack:"plan,omitempty"`
	Credits    int64       `msgpack:"credits,omitempty"`
	PurchaseID string      `msgpack:"purchase,omitempty"`
	KeyID      string      `msgpack:"key,omitempty"`
	KeyHash    [32]byte    `msgpack:"key_hash"`
	KeyHint    string      `msgpack:"key_hint,omitempty"`
	Now        int64       `msgpack:"now"`
}

// SetAppExport switches the ledger and video-event export on or off. Switching it
// on records every balance as an opening entry and every video's state, so what
// the app database receives adds up from the first export.
type SetAppExport struct {
	On  bool  `msgpack:"on"`
	Now int64 `msgpack:"now"`
}

// TrimExported drops what the app database has committed: ledger entries and video
// events through log index Through, refusals through Inbound.
type TrimExported struct {
	Through uint64      `msgpack:"through"`
	Inbound InboundMark `msgpack:"inbound"`
}

// DebitCredits takes credits from an account for a render the app does itself.
// Key makes it idempotent: the same key and amount answers the first debit again.
type DebitCredits struct {
	AccountID string `msgpack:"account"`
	Amount    int64  `msgpack:"amount"`
	Key       string `msgpack:"key"`
	Now       int64  `msgpack:"now"`
}

func (AppRows) Type() MessageType      { return AppRowsType }
func (SetAppExport) Type() MessageType { return SetAppExportType }
func (TrimExported) Type() MessageType { return TrimExportedType }
func (DebitCredits) Type() MessageType { return DebitCreditsType }
