package admin

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/vidfarm/vidfarm/textguard"
)

// Nodes lists the render nodes.
func (c *Client) Nodes(ctx context.Context) ([]NodeJSON, error) {
	var out NodeList
	err := c.into(ctx, http.MethodGet, "/admin/v1/nodes", nil, &out)
	return out.Nodes, err
}

// CordonNode stops placing work on a node (id or name); its running tasks go on.
func (c *Client) CordonNode(ctx context.Context, node, reason string) (NodeJSON, error) {
	return c.maintain(ctx, node, "cordon", map[string]any{"reason": reason})
}

// DrainNode cordons a node and hands back, after timeout, the tasks it still runs.
func (c *Client) DrainNode(ctx context.Context, node string, timeout time.Duration, reason string) (NodeJSON, error) {
	return c.maintain(ctx, node, "drain", map[string]any{"reason": reason, "timeout_seconds": timeout.Seconds()})
}

// RemoveRenderNode forgets a render node (id or name) whose machine is
// gone; force removes one that is not down.
func (c *Client) RemoveRenderNode(ctx context.Context, node string, force bool) (RemovedNode, error) {
	path := "/admin/v1/nodes/" + url.PathEscape(node) + "/remove"
	if force {
		path += "?force=true"
	}
	var out RemovedNode
	err := c.into(ctx, http.MethodPost, path, nil, &out)
	return out, err
}

// UncordonNode lifts a node's cordon or drain.
func (c *Client) UncordonNode(ctx context.Context, node string) (NodeJSON, error) {
	return c.maintain(ctx, node, "uncordon", nil)
}

func (c *Client) maintain(ctx context.Context, node, action string, body any) (NodeJSON, error) {
	var out NodeJSON
	if node == "" {
		return out, fmt.Errorf("node %s: name the node (its id or name, from `vidfarm admin node list`)", action)
	}
	err := c.into(ctx, http.MethodPost, "/admin/v1/nodes/"+url.PathEscape(node)+"/"+action, body, &out)
	return out, err
}

// WriteNodeTable writes nodes as a table for a terminal: one line a node,
// times relative to now.
func WriteNodeTable(w io.Writer, nodes []NodeJSON, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tNAME\tSTATE\tGPUS\tGPU USE\tRUNNING\tLAST HEARTBEAT\tSINCE\tDEADLINE\tREASON")
	for _, n := range nodes {
		state := n.State
		if n.Down {
			state += ",down"
		}
		if n.AgentDraining {
			state += ",agent-draining"
		}
		reason := n.MaintenanceReason
		if n.Paused != "" {
			state += ",paused"
			if reason == "" {
				reason = n.Paused
			}
		}
		busy := 0
		for _, g := range n.GPUs {
			if g.Busy {
				busy++
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d busy\t%s\t%d\t%s\t%s\t%s\t%s\n", textguard.Printable(n.ID), textguard.Printable(n.Name), textguard.Printable(state), busy, len(n.GPUs),
			gpuUse(n), len(n.RunningTasks), ago(now, n.LastHeartbeat), agoPtr(now, n.MaintenanceSince), untilPtr(now, n.DrainDeadline),
			dash(reason))
	}
	return tw.Flush()
}

// gpuUse sums up a node's last GPU readings: memory in use of the total,
// the mean utilisation and the hottest GPU; "-" without readings, marked
// stale when they stopped coming.
func gpuUse(n NodeJSON) string {
	var used, total, util, hot float64
	var withUsed, withUtil, withTemp int
	for _, g := range n.GPUs {
		if g.MemoryUsedGB != nil {
			used, total, withUsed = used+*g.MemoryUsedGB, total+g.MemoryTotalGB, withUsed+1
		}
		if g.UtilizationPercent != nil {
			util, withUtil = util+*g.UtilizationPercent, withUtil+1
		}
		if g.TemperatureC != nil {
			hot, withTemp = max(hot, *g.TemperatureC), withTemp+1
		}
	}
	if withUsed+withUtil+withTemp == 0 {
		return "-"
	}
	var parts []string
	if withUsed > 0 {
		parts = append(parts, fmt.Sprintf("%.0f/%.0f GB", used, total))
	}
	if withUtil > 0 {
		parts = append(parts, fmt.Sprintf("%.0f%%", util/float64(withUtil)))
	}
	if withTemp > 0 {
		parts = append(parts, fmt.Sprintf("%.0f°C max", hot))
	}
	out := strings.Join(parts, " ")
	if n.TelemetryStale {
		out += " (stale)"
	}
	return out
}

// dash is s for a table cell: "-" when empty, its control characters
// made visible.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return textguard.Printable(s)
}

// ago writes how long before now t was, in whole seconds ("12s ago").
func ago(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return now.Sub(t).Round(time.Second).String() + " ago"
}

func agoPtr(now time.Time, t *time.Time) string {
	if t == nil {
		return "-"
	}
	return ago(now, *t)
}

// untilPtr writes how long after now t is ("in 4m0s"), or "passed".
func untilPtr(now time.Time, t *time.Time) string {
	if t == nil {
		return "-"
	}
	d := t.Sub(now).Round(time.Second)
	if d <= 0 {
		return "passed"
	}
	return "in " + d.String()
}
