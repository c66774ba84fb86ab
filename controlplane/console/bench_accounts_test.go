package console_test

import (
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/console"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// BenchmarkConsoleAccounts answers the accounts pages over a state of
// VIDFARM_BENCH_ACCOUNTS accounts (default 10,000) with 10 videos each,
// and one busy account with 2×console.SpendScanLimit videos made today
// (its spending reads the most a page reads); the target is 100 ms an
// answer.
func BenchmarkConsoleAccounts(b *testing.B) {
	nAccounts := envInt("VIDFARM_BENCH_ACCOUNTS", 10_000)
	f, apply := benchState(b)
	start, now := time.Now(), time.Now().UnixNano()
	spec := fsm.Spec{Mode: fsm.ModeManual, Prompt: "p", Model: "wan-2.2-a14b", Operation: "text_to_video", Resolution: "720p", AspectRatio: "16:9", DurationSeconds: 5}
	vid := 0
	video := func(account string) {
		apply(&fsm.CreateVideo{VideoID: fmt.Sprintf("vid_%08d", vid), AccountID: account, Spec: spec, Price: 1, Now: now + int64(vid)})
		vid++
	}
	for a := range nAccounts {
		id := fmt.Sprintf("acct_%06d", a)
		apply(&fsm.CreateAccount{AccountID: id, Name: fmt.Sprintf("Shop %d", a), Plan: fsm.PlanMax, Credits: fsm.MaxCredits, KeyID: id + "_key",
			KeyHash: sha256.Sum256([]byte(id)), KeyHint: "k", Now: now})
		for range 10 {
			video(id)
		}
	}
	busy := "acct_000000"
	for range 2 * console.SpendScanLimit {
		video(busy)
	}
	b.Logf("%d accounts, %d videos, filled in %s", nAccounts, vid, time.Since(start).Round(time.Millisecond))

	con := console.New(console.Config{Token: "bench", Admin: http.NotFoundHandler(), FSM: f, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	cookie := benchLogin(b, con)
	for _, c := range []struct{ name, path string }{
		{"list", "/console/api/accounts"},
		{"list_after", fmt.Sprintf("/console/api/accounts?after=acct_%06d", nAccounts/2)},
		{"search", "/console/api/accounts?q=shop+99"},
		{"account", fmt.Sprintf("/console/api/accounts/acct_%06d", nAccounts-1)},
		{"busy_account", "/console/api/accounts/" + busy},
	} {
		b.Run(c.name, func(b *testing.B) {
			var bytes int
			for b.Loop() {
				req := httptest.NewRequest("GET", c.path, nil)
				req.AddCookie(cookie)
				rec := httptest.NewRecorder()
				con.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("%s: %d %s", c.path, rec.Code, rec.Body)
				}
				bytes = rec.Body.Len()
			}
			b.ReportMetric(float64(bytes), "bytes/answer")
		})
	}
}
