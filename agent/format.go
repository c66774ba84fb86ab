package agent

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// PrintCapacity writes c to w for "vidfarm agent --print-capacity": the
// table of FormatCapacity, or with asJSON the Capacity as indented JSON (the
// form the agent registers with).
func PrintCapacity(w io.Writer, c Capacity, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(c); err != nil {
			return fmt.Errorf("print capacity: %w", err)
		}
		return nil
	}
	if _, err := io.WriteString(w, FormatCapacity(c)); err != nil {
		return fmt.Errorf("print capacity: %w", err)
	}
	return nil
}

// FormatCapacity renders c for a person: the host, the driver, the tools,
// then one row per GPU and per MIG instance, then the warnings.
func FormatCapacity(c Capacity) string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	row := func(cells ...string) { fmt.Fprintln(tw, strings.Join(cells, "\t")) }

	row("host", orDash(c.Hostname))
	row("cpu cores", fmt.Sprint(c.CPUCores))
	if c.MemoryTotalMB > 0 {
		row("memory", fmt.Sprintf("%d MiB total, %d MiB available", c.MemoryTotalMB, c.MemoryAvailableMB))
	} else {
		row("memory", "unknown")
	}
	if c.NvidiaDriver {
		row("nvidia driver", fmt.Sprintf("%s (CUDA %s)", orDash(c.DriverVersion), orDash(c.CUDADriverVersion)))
	} else {
		row("nvidia driver", "none")
	}
	tools := make([]string, 0, len(c.Tools))
	for _, t := range c.Tools {
		switch {
		case t.Found && t.Problem != "":
			tools = append(tools, t.Name+" (unusable: "+t.Problem+")")
		case t.Found:
			tools = append(tools, t.Name+" ("+t.Path+")")
		default:
			tools = append(tools, t.Name+" (missing)")
		}
	}
	row("tools", orDash(strings.Join(tools, ", ")))
	if c.Note != "" {
		row("note", c.Note)
	}
	_ = tw.Flush()

	if len(c.GPUs) > 0 {
		b.WriteString("\n")
		tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		row("GPU", "NAME", "UUID", "MEMORY FREE/TOTAL", "UTIL GPU/MEM", "MIG", "STATUS")
		for _, g := range c.GPUs {
			mig := "off"
			switch {
			case g.MIGEnabled:
				mig = fmt.Sprintf("on, %d instances", len(g.MIGInstances))
			case g.Error != "":
				mig = "-" // perhaps not read
			}
			row(fmt.Sprint(g.Index), orDash(g.Name), orDash(g.UUID),
				memory(g.MemoryFreeMB, g.MemoryTotalMB), utilization(g), mig, status(g.Error))
			for _, m := range g.MIGInstances {
				name := m.Profile
				if name == "" {
					name = m.Name
				}
				row(fmt.Sprintf("%d/%d", g.Index, m.Index), "  MIG "+orDash(name), orDash(m.UUID),
					memory(m.MemoryFreeMB, m.MemoryTotalMB), "-", "", status(m.Error))
			}
		}
		_ = tw.Flush()
	}

	if len(c.Warnings) > 0 {
		b.WriteString("\nwarnings:\n")
		for _, w := range c.Warnings {
			b.WriteString("  " + w + "\n")
		}
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func memory(free, total uint64) string {
	if total == 0 {
		return "-"
	}
	return fmt.Sprintf("%d/%d MiB", free, total)
}

func utilization(g GPU) string {
	if g.UtilizationGPUPercent == nil && g.UtilizationMemoryPercent == nil {
		return "n/a"
	}
	pct := func(p *uint32) string {
		if p == nil {
			return "n/a"
		}
		return fmt.Sprintf("%d%%", *p)
	}
	return pct(g.UtilizationGPUPercent) + "/" + pct(g.UtilizationMemoryPercent)
}

func status(errText string) string {
	if errText == "" {
		return "ok"
	}
	return "unusable: " + errText
}
