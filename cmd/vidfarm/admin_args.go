package main

import (
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/admin"
)

// adminFlags is, per admin command, the flags it needs and those it may
// take (--json, any): the CLI checks them before it sends anything, so a
// forgotten flag is named instead of reaching the server as an empty id,
// and a flag of another command is refused instead of ignored.
var adminFlags = map[string]struct{ need, may []string }{
	"account create":     {need: []string{"name", "plan"}, may: []string{"credits", "idempotency-key"}},
	"account get":        {need: []string{"account"}},
	"key create":         {need: []string{"account"}},
	"key revoke":         {need: []string{"key"}},
	"credits grant":      {need: []string{"account", "amount"}, may: []string{"idempotency-key"}},
	"credits debit":      {need: []string{"account", "amount", "idempotency-key"}},
	"plan set":           {need: []string{"account", "plan"}},
	"video fail":         {need: []string{"video"}, may: []string{"reason"}},
	"video inspect":      {may: []string{"video"}},
	"queue":              {may: []string{"account", "limit"}},
	"webhook deliveries": {may: []string{"account", "webhook", "event", "state", "limit"}},
	"snapshot":           {},
	"status":             {},
	"cluster status":     {},
	"cluster members":    {},
	"cluster add":        {need: []string{"node", "raft-addr", "public-url", "admin-url", "agent-url"}, may: []string{"understands", "voter"}},
	"cluster remove":     {need: []string{"node"}},
	"node list":          {},
	"node cordon":        {may: []string{"reason"}},
	"node drain":         {may: []string{"timeout", "reason"}},
	"node uncordon":      {},
	"node remove":        {may: []string{"force"}},
	"backup":             {need: []string{"out"}},
	"restore":            {need: []string{"in"}, may: []string{"force"}},
}

// takesID is whether an admin command takes one id as an argument (NODE,
// or the video of video inspect).
func takesID(cmd string) bool { return strings.HasPrefix(cmd, "node ") || cmd == "video inspect" }

// checkAdminArgs refuses a command's flags and arguments that it cannot
// use, before anything is sent. id is the argument takesID commands took.
func checkAdminArgs(cmd string, sub *flag.FlagSet, id string, extra []string) error {
	spec := adminFlags[cmd]
	usage := adminUsageLine(cmd)
	set := map[string]bool{}
	sub.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for _, name := range spec.need {
		if !set[name] {
			return fmt.Errorf("admin %s: --%s is required (usage: %s)", cmd, name, usage)
		}
	}
	for name := range set {
		if name != "json" && !slices.Contains(spec.need, name) && !slices.Contains(spec.may, name) {
			return fmt.Errorf("admin %s: --%s does not apply to this command (usage: %s)", cmd, name, usage)
		}
	}
	if len(extra) > 0 {
		return fmt.Errorf("admin %s: unexpected argument %q (usage: %s)", cmd, extra[0], usage)
	}
	if strings.HasPrefix(cmd, "node ") && cmd != "node list" && id == "" {
		return fmt.Errorf("admin %s: name the render node, by id or name (usage: %s)", cmd, usage)
	}
	if cmd == "video inspect" && id == "" {
		return fmt.Errorf("admin %s: name the video (usage: %s)", cmd, usage)
	}
	if set["limit"] {
		if n, _ := sub.Lookup("limit").Value.(flag.Getter).Get().(int); n < 1 {
			return fmt.Errorf("admin %s: --limit must be at least 1, not %d", cmd, n)
		}
	}
	if set["timeout"] {
		if d, _ := sub.Lookup("timeout").Value.(flag.Getter).Get().(time.Duration); d < 0 || d > admin.MaxDrainTimeout {
			return fmt.Errorf("admin %s: --timeout must be from 0 to %s, not %s", cmd, admin.MaxDrainTimeout, d)
		}
	}
	if set["understands"] {
		if n, _ := sub.Lookup("understands").Value.(flag.Getter).Get().(uint); n < 1 || n > 255 {
			return fmt.Errorf("admin %s: --understands is a command type, 1 to 255, not %d", cmd, n)
		}
	}
	return nil
}

// adminUsageLine is cmd's line of adminUsage, trimmed.
func adminUsageLine(cmd string) string {
	for _, l := range strings.Split(adminUsage, "\n") {
		l = strings.TrimSpace(l)
		if l == cmd || strings.HasPrefix(l, cmd+" ") {
			if i := strings.Index(l, "  ("); i > 0 {
				l = strings.TrimSpace(l[:i]) // the line's note
			}
			return "vidfarm admin " + l
		}
	}
	return "vidfarm admin " + cmd
}
