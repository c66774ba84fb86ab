package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/vidfarm/vidfarm/bench"
)

// runBenchSim is `vidfarm bench sim`: it reads a fleet and a workload
// (JSON), runs bench.Simulate and prints the report.
func runBenchSim(args []string) error {
	fs := flag.NewFlagSet("bench sim", flag.ExitOnError)
	fleetPath := fs.String("fleet", "", "fleet file (JSON, see bench/testdata/fleet-example.json)")
	workloadPath := fs.String("workload", "", "workload file (JSON, see bench/testdata/workload-example.json)")
	hours := fs.Float64("hours", 24, "hours of simulated time")
	warmup := fs.Float64("warmup", 0, "hours at the start left out of the wait statistics")
	seed := fs.Uint64("seed", 1, "random seed (same seed, same report)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *fleetPath == "" || *workloadPath == "" {
		return fmt.Errorf("bench sim: -fleet and -workload are required")
	}
	ff, err := os.Open(*fleetPath)
	if err != nil {
		return err
	}
	defer ff.Close()
	fleet, err := bench.DecodeFleet(ff)
	if err != nil {
		return fmt.Errorf("%s: %w", *fleetPath, err)
	}
	wf, err := os.Open(*workloadPath)
	if err != nil {
		return err
	}
	defer wf.Close()
	wl, err := bench.DecodeWorkload(wf)
	if err != nil {
		return fmt.Errorf("%s: %w", *workloadPath, err)
	}
	rep, err := bench.Simulate(fleet, wl, bench.SimConfig{Hours: *hours, Seed: *seed, WarmupHours: *warmup})
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	fmt.Print(rep.String())
	return nil
}
