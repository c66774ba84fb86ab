package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/vidfarm/vidfarm/client"
)

// TestClientHelp: -h of the API client commands lists -key without its
// value from VIDFARM_API_KEY (a secret on the screen, in a pasted bug
// report), as admin's -h does its token, and lists -poll-interval only for
// video, the one that follows videos.
func TestClientHelp(t *testing.T) {
	const key = "vf_live_zop7secretsecretsecret"
	cases := []struct {
		cmd      string
		wantPoll bool
	}{
		{"video", true},
		{"webhook", false},
		{"admin", false},
	}
	for _, tc := range cases {
		t.Run(tc.cmd, func(t *testing.T) {
			cmd := exec.Command(vidfarmBinary(t), tc.cmd, "-h")
			cmd.Env = append(os.Environ(), "VIDFARM_API_KEY="+key, "VIDFARM_ADMIN_TOKEN="+key)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("vidfarm %s -h: %v\n%s", tc.cmd, err, out)
			}
			help := string(out)
			if strings.Contains(help, "zop7") {
				t.Errorf("vidfarm %s -h shows the secret:\n%s", tc.cmd, help)
			}
			if tc.cmd != "admin" && !strings.Contains(help, "-key string") {
				t.Errorf("vidfarm %s -h does not list -key:\n%s", tc.cmd, help)
			}
			if got := strings.Contains(help, "-poll-interval"); got != tc.wantPoll {
				t.Errorf("vidfarm %s -h lists -poll-interval: %t, want %t:\n%s", tc.cmd, got, tc.wantPoll, help)
			}
		})
	}
}

// TestPrintDeliveryAttempts: a delivery's attempts are counted in words
// that agree with the number.
func TestPrintDeliveryAttempts(t *testing.T) {
	cases := []struct {
		attempts int
		want     string
	}{
		{0, "  0 attempts"},
		{1, "  1 attempt  last:"},
		{2, "  2 attempts  last:"},
	}
	for _, tc := range cases {
		var b bytes.Buffer
		cli := &webhookCLI{out: &b}
		d := &client.WebhookDelivery{ID: "del_1", Status: "delivered", EventType: "video.completed",
			Attempts: make([]client.DeliveryAttempt, tc.attempts)}
		cli.printDelivery(d)
		if !strings.Contains(b.String(), tc.want) {
			t.Errorf("%d attempts printed %q, want %q in it", tc.attempts, b.String(), tc.want)
		}
	}
}
