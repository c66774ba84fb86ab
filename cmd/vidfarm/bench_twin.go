package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/vidfarm/vidfarm/bench"
	"github.com/vidfarm/vidfarm/controlplane/admin"
)

// twinFlags are bench sim's inputs besides -fleet and -workload: a twin of
// a live farm (-from-farm) and the what-ifs applied to either.
type twinFlags struct {
	farm, token, out, add string
	since                 time.Duration
	scale                 float64
}

func (tw *twinFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&tw.farm, "from-farm", "", "admin URL of a live farm (e.g. http://127.0.0.1:8081): a twin of it, made from what it did in -since, replaces -fleet and -workload")
	fs.StringVar(&tw.token, "admin-token", "", "-from-farm: the farm's admin token")
	fs.DurationVar(&tw.since, "since", 168*time.Hour, "-from-farm: how much of the farm's history, back from now (at most 2160h)")
	fs.StringVar(&tw.out, "twin-out", "", "-from-farm: also write the twin as fleet.yaml and workload.yaml into this directory, to edit and rerun")
	fs.Float64Var(&tw.scale, "scale-arrivals", 1, "what-if: multiply the workload's arrival rate (1.4: 40% more traffic)")
	fs.StringVar(&tw.add, "add-nodes", "", "what-if: more nodes in named groups, group=N,… (negative N removes; each group once), or N alone: N more in every group")
}

// inputs reads the fleet and the workload from their files or, with
// -from-farm, from the farm's history, then applies the what-ifs.
func (tw *twinFlags) inputs(fleetPath, workloadPath string) (bench.Fleet, bench.Workload, error) {
	var fleet bench.Fleet
	var wl bench.Workload
	var err error
	switch {
	case tw.farm != "" && (fleetPath != "" || workloadPath != ""):
		return fleet, wl, fmt.Errorf("bench sim: -from-farm replaces -fleet and -workload; give one or the other")
	case tw.farm != "":
		if fleet, wl, err = tw.twin(); err != nil {
			return fleet, wl, err
		}
	case fleetPath == "" || workloadPath == "":
		return fleet, wl, fmt.Errorf("bench sim: -fleet and -workload are required (or -from-farm)")
	default:
		if fleet, err = decodeFile(fleetPath, bench.DecodeFleet); err != nil {
			return fleet, wl, err
		}
		if fleet.Name == "" {
			// The charts' titles name the farm; the file's name is better than none.
			fleet.Name = strings.TrimSuffix(filepath.Base(fleetPath), filepath.Ext(fleetPath))
		}
		if wl, err = decodeFile(workloadPath, bench.DecodeWorkload); err != nil {
			return fleet, wl, err
		}
	}
	add, err := groupCounts(fleet, "-add-nodes", tw.add)
	if err != nil {
		return fleet, wl, err
	}
	if fleet, wl, err = bench.WhatIf(fleet, wl, tw.scale, add); err != nil {
		return fleet, wl, fmt.Errorf("bench sim: what-if: %w", err)
	}
	return fleet, wl, nil
}

// twin reads the farm's history and makes the fleet and workload of it,
// writing them to -twin-out when asked.
func (tw *twinFlags) twin() (bench.Fleet, bench.Workload, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	fmt.Fprintf(os.Stderr, "reading %s of history from %s\n", tw.since, tw.farm)
	h, err := (&admin.Client{Server: tw.farm, Token: tw.token}).History(ctx, tw.since)
	if err != nil {
		return bench.Fleet{}, bench.Workload{}, fmt.Errorf("bench sim: -from-farm: %w", err)
	}
	fleet, wl, err := bench.Twin(h)
	if err != nil {
		return fleet, wl, fmt.Errorf("bench sim: -from-farm %s: %w", tw.farm, err)
	}
	videos := 0
	for _, c := range h.Classes {
		videos += c.Videos
	}
	nodes := 0
	for _, g := range fleet.Groups {
		nodes += g.Count
	}
	from, to := bench.TwinWindow(h)
	// A farm minutes old is read to the hundredth of a second: the rate
	// the twin takes is its videos over this span.
	span := to.Sub(from)
	window := span.Round(time.Second).String()
	if span < time.Hour {
		window = span.Round(10 * time.Millisecond).String()
	}
	if from.After(h.From) {
		since := "when the farm began"
		if h.Began.IsZero() {
			since = "the hour of the farm's first video"
		}
		window += fmt.Sprintf(" (from %s, %s: --since asked for %s)", since, from.Format(time.RFC3339), h.To.Sub(h.From).Round(time.Second))
	}
	fmt.Fprintf(os.Stderr, "twin: %d videos in %s (%.1f an hour), %d nodes in %d groups\n",
		videos, window, wl.Arrival.RatePerHour, nodes, len(fleet.Groups))
	if tw.out == "" {
		return fleet, wl, nil
	}
	if err := os.MkdirAll(tw.out, 0o755); err != nil {
		return fleet, wl, err
	}
	for name, v := range map[string]any{"fleet.yaml": fleet, "workload.yaml": wl} {
		b, err := yaml.Marshal(v)
		if err != nil {
			return fleet, wl, fmt.Errorf("bench sim: encode the twin's %s: %w", name, err)
		}
		head := fmt.Sprintf("# A twin of %s, made by `vidfarm bench sim --from-farm` from %s to %s.\n", tw.farm,
			from.Format(time.RFC3339), to.Format(time.RFC3339))
		if err := os.WriteFile(filepath.Join(tw.out, name), append([]byte(head), b...), 0o644); err != nil {
			return fleet, wl, err
		}
	}
	fmt.Fprintf(os.Stderr, "twin written to %s\n", tw.out)
	return fleet, wl, nil
}
