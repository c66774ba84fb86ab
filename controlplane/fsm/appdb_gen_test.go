package fsm_test

import (
	"pgregory.net/rapid"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// appCommand draws one of the app-database bridge's commands: rows in mark order
// (now and then one sent again), the export switch, trims and debits.
func (g *cmdGen) appCommand(t *rapid.T) fsm.Command {
	switch rapid.IntRange(0, 3).Draw(t, "app_kind") {
	case 0:
		return &fsm.SetAppExport{On: rapid.IntRange(0, 3).Draw(t, "export_on") > 0, Now: g.now}
	case 1:
		var c fsm.AppRows
		for range rapid.IntRange(1, 3).Draw(t, "rows") {
			g.seq++
			mark := fsm.InboundMark{Xid: uint64(g.seq / 2), Seq: int64(g.seq)}
			if rapid.IntRange(0, 5).Draw(t, "resend") == 0 {
				mark.Seq -= int64(rapid.IntRange(0, 3).Draw(t, "back"))
			}
			table := rapid.SampledFrom([]string{fsm.AppAccounts, fsm.AppPurchases, fsm.AppPlanChanges, fsm.AppKeys, fsm.AppKeyRevocations, "x"}).Draw(t, "table")
			r := fsm.AppRow{Mark: mark, Table: table, AccountID: pick(t, g.accounts, "acct"), Plan: fsm.PlanPro,
				Credits: rapid.Int64Range(-1, 30).Draw(t, "row_credits"), PurchaseID: g.id("pur"), KeyID: pick(t, g.keys, "key"), Now: g.now}
			switch table {
			case fsm.AppAccounts:
				r.AccountID = g.id("app")
				g.accounts = append(g.accounts, r.AccountID)
			case fsm.AppKeys:
				r.KeyID = g.id("appkey")
				r.KeyHash = keyHash(r.KeyID)
				g.keys = append(g.keys, r.KeyID)
			}
			c.Rows = append(c.Rows, r)
		}
		return &c
	case 2:
		return &fsm.TrimExported{Through: uint64(rapid.IntRange(0, 400).Draw(t, "through")),
			Inbound: fsm.InboundMark{Xid: uint64(g.seq / 2), Seq: int64(rapid.IntRange(0, g.seq).Draw(t, "trim_seq"))}}
	}
	return &fsm.DebitCredits{AccountID: pick(t, g.accounts, "acct"), Amount: rapid.Int64Range(-1, 30).Draw(t, "debit"),
		Key: rapid.SampledFrom([]string{"", "d1", "d2"}).Draw(t, "debit_key"), Now: g.now}
}
