package main

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// TestAdminArgsCheckedBeforeSending runs the binary against an address
// where nothing listens: a command whose flags are wrong is refused by name
// (exit 1) without a request, and one whose flags are right gets as far as
// the connection.
func TestAdminArgsCheckedBeforeSending(t *testing.T) {
	t.Parallel()
	bin := vidfarmBinary(t)
	for _, tc := range []struct {
		args []string
		want string // in stderr
	}{
		{[]string{"account", "get"}, "admin account get: --account is required (usage: vidfarm admin account get --account ID)"},
		{[]string{"key", "revoke", "key_abc"}, "admin key revoke: --key is required"},
		{[]string{"video", "fail", "vid_abc"}, "admin video fail: --video is required"},
		{[]string{"credits", "grant", "--account", "a", "--amount", "5", "extra"}, `admin credits grant: unexpected argument "extra"`},
		{[]string{"account", "get", "--account", "a", "--plan", "free"}, "admin account get: --plan does not apply to this command"},
		{[]string{"credits", "debit", "--account", "a", "--amount", "5"}, "--idempotency-key is required"},
		{[]string{"queue", "--limit", "0"}, "admin queue: --limit must be at least 1, not 0"},
		{[]string{"webhook", "deliveries", "--limit", "-1"}, "--limit must be at least 1, not -1"},
		{[]string{"node", "drain", "n1", "--timeout", "-5m"}, "admin node drain: --timeout must be from 0 to 168h0m0s, not -5m0s"},
		{[]string{"node", "cordon"}, "admin node cordon: name the render node"},
		{[]string{"node", "cordon", "n1", "n2"}, `unexpected argument "n2"`},
		{[]string{"video", "inspect"}, "admin video inspect: name the video"},
		{[]string{"node", "remove"}, "admin node remove: name the render node"},
		{[]string{"node", "remove", "n1", "--reason", "x"}, "admin node remove: --reason does not apply to this command"},
		{[]string{"cluster", "add", "--node", "n4", "--raft-addr", "h:1", "--public-url", "http://h:2", "--admin-url", "http://h:3",
			"--agent-url", "http://h:4", "--understands", "300"}, "--understands is a command type, 1 to 255, not 300"},
		{[]string{"cluster", "add", "--node", "n4"}, "--raft-addr is required"},
		{[]string{"account", "frobnicate"}, `unknown admin command "account frobnicate"`},
		// Right flags: refused only for want of a server.
		{[]string{"account", "get", "--account", "a", "--json"}, "connection refused"},
		{[]string{"node", "cordon", "--reason", "disk", "n1"}, "connection refused"},
		{[]string{"video", "inspect", "--video", "vid_1"}, "connection refused"},
		{[]string{"node", "remove", "n1", "--force"}, "connection refused"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			full := append([]string{"admin", "--server", "http://127.0.0.1:1", "--admin-token", "t"}, tc.args...)
			out, err := exec.Command(bin, full...).CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() == 0 {
				t.Fatalf("exit %v, want a failure: %s", err, out)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Fatalf("output %q, want it to say %q", out, tc.want)
			}
		})
	}
}

// TestAdminClusterAddByHandIsANonvoter is the mistake that once stopped a
// cluster: a node added by hand at an address where nothing answers. Added
// as a nonvoter, it does not count for a majority, so writes go on, and it
// can be removed.
func TestAdminClusterAddByHandIsANonvoter(t *testing.T) {
	p := startServer(t, t.TempDir())
	r, code := adminCLI(t, p, "cluster", "add", "--node", "ghost", "--raft-addr", "127.0.0.1:1",
		"--public-url", "http://127.0.0.1:2", "--admin-url", "http://127.0.0.1:3", "--agent-url", "http://127.0.0.1:4")
	if code != 0 || r["stage"] != "nonvoter" {
		t.Fatalf("cluster add: exit %d, %v", code, r)
	}
	m, _ := adminCLI(t, p, "cluster", "members")
	suffrage := map[string]any{}
	for _, x := range m["members"].([]any) {
		suffrage[x.(map[string]any)["id"].(string)] = x.(map[string]any)["suffrage"]
	}
	if suffrage["ghost"] != "Nonvoter" || m["leader"] == "" {
		t.Fatalf("members after the add: %v", m)
	}
	if r, code := adminCLI(t, p, "account", "create", "--name", "After", "--plan", "pro"); code != 0 || r["account_id"] == nil {
		t.Fatalf("a write with the nonvoter added: exit %d, %v", code, r)
	}
	if r, code := adminCLI(t, p, "cluster", "remove", "--node", "ghost"); code != 0 || r["removed"] != "ghost" {
		t.Fatalf("cluster remove: exit %d, %v", code, r)
	}
}
