package admin

import (
	"strings"
	"testing"
	"time"
	"unicode"
)

// TestVideoInspectCredits: `vidfarm admin video inspect` says how many
// credits went back, so a cancel's partial refund does not read as a full
// one, and gives no percent where the state does not keep it.
func TestVideoInspectCredits(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name    string
		v       VideoInspectJSON
		want    string // the first line
		without []string
	}{
		{"canceled mid-render", VideoInspectJSON{Status: "canceled", CreditsCharged: 36, CreditsRefunded: true, RefundedCredits: 8},
			"vid_1  account acct_1  auto -  canceled  charged 36, refunded 8", []string{"0%", "(refunded)"}},
		{"failed", VideoInspectJSON{Status: "failed", CreditsCharged: 36, CreditsRefunded: true, RefundedCredits: 36},
			"vid_1  account acct_1  auto -  failed  charged 36, refunded 36", []string{"0%"}},
		{"failed preview, nothing charged", VideoInspectJSON{Status: "failed", CreditsRefunded: true},
			"vid_1  account acct_1  auto -  failed  charged 0 (refunded)", nil},
		{"completed", VideoInspectJSON{Status: "completed", Percent: 100, CreditsCharged: 36},
			"vid_1  account acct_1  auto -  completed  100%  charged 36", []string{"refunded"}},
		{"processing", VideoInspectJSON{Status: "processing", Percent: 84, CreditsCharged: 36},
			"vid_1  account acct_1  auto -  processing  84%  charged 36", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.v.VideoID, tc.v.AccountID, tc.v.Mode, tc.v.CreatedAt = "vid_1", "acct_1", "auto", now
			var b strings.Builder
			if err := WriteVideoInspect(&b, tc.v, now); err != nil {
				t.Fatal(err)
			}
			first, _, _ := strings.Cut(b.String(), "\n")
			if first != tc.want {
				t.Errorf("first line %q, want %q", first, tc.want)
			}
			for _, s := range tc.without {
				if strings.Contains(first, s) {
					t.Errorf("first line %q says %q", first, s)
				}
			}
		})
	}
}

// TestTablesShowNoControlCharacters: what a server sends (a fail reason,
// a node's name) cannot reach the terminal as a control character, so
// `vidfarm admin video inspect`, `queue` and `node list` cannot be made to
// retitle or recolour it, whatever the server stored.
func TestTablesShowNoControlCharacters(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	evil := "\x1b[31mEVIL\x1b[0m <b>x</b> \x1b]0;PWNED\x07\u009b2J"
	write := map[string]func(*strings.Builder) error{
		"video inspect": func(b *strings.Builder) error {
			return WriteVideoInspect(b, VideoInspectJSON{VideoID: "vid_1", AccountID: "acct_1", Mode: "auto", Status: "failed", Error: evil,
				Reason: "retrying", Message: evil, Tasks: []TaskJSON{{Name: "render", Kind: "gpu", State: "failed", LastFailure: evil, Node: evil}},
				Timings: []TimingJSON{{Kind: "plan", GPU: evil}}}, now)
		},
		"queue": func(b *strings.Builder) error {
			return WriteQueueTable(b, QueueJSON{Waiting: []WaitingJSON{{VideoID: "vid_1", Reason: "no_capacity", Message: evil}}}, now)
		},
		"node list": func(b *strings.Builder) error {
			return WriteNodeTable(b, []NodeJSON{{ID: "node_1", Name: evil, State: "cordoned", MaintenanceReason: evil}}, now)
		},
	}
	for name, w := range write {
		t.Run(name, func(t *testing.T) {
			var b strings.Builder
			if err := w(&b); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			if i := strings.IndexFunc(out, func(r rune) bool { return r != '\n' && unicode.IsControl(r) }); i >= 0 {
				t.Fatalf("output holds a control character at byte %d:\n%q", i, out)
			}
			if !strings.Contains(out, `\x1b[31mEVIL\x1b[0m <b>x</b> \x1b]0;PWNED\a\u009b2J`) {
				t.Errorf("output does not show the text with its control characters visible:\n%s", out)
			}
		})
	}
}
