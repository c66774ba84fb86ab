package admin

import (
	"strings"
	"testing"
	"time"
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
