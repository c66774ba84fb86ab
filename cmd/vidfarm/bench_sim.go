package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vidfarm/vidfarm/bench"
)

// defaultReplications is -replications' default: ten runs give intervals
// half as wide as five (t(0.975, 9) = 2.26 against 2.78, over √10), and
// twenty did little better on the example farm's sweep, whose answer all
// three settle (measurements in bench/README.md).
const defaultReplications = 10

// runBenchSim is `vidfarm bench sim`: it reads a fleet and a workload
// (YAML or JSON), runs bench.Simulate, or bench.Sweep with -sweep, and
// prints the report; -svg also draws it.
func runBenchSim(args []string) error {
	fs := flag.NewFlagSet("bench sim", flag.ExitOnError)
	fleetPath := fs.String("fleet", "", "fleet file (YAML or JSON, see bench/examples/fleet.yaml)")
	workloadPath := fs.String("workload", "", "workload file (YAML or JSON, see bench/examples/workload.yaml)")
	hours := fs.Float64("hours", 24, "hours of simulated time")
	warmup := fs.Float64("warmup", 0, "hours at the start left out of the wait statistics")
	seed := fs.Uint64("seed", 1, "random seed of the first replication (same seed, same report)")
	repl := fs.Int("replications", defaultReplications, "independent runs (seeds seed, seed+1, …) averaged, on all cores; every figure gets a 95% confidence interval; 1 for a single run")
	format := fs.String("format", "table", "report format on stdout: table, json or csv")
	svg := fs.String("svg", "", "also write a chart to this SVG file (timeline; with -sweep: wait against fleet size)")
	sweep := fs.String("sweep", "", "node group whose count to vary: the smallest that meets -target-p95 or, without it, every class's SLOs")
	sweepMin := fs.Int("sweep-min", 1, "smallest count of the swept group")
	sweepMax := fs.Int("sweep-max", 0, "largest count of the swept group (default: twice its count in the fleet)")
	sweepStep := fs.Int("sweep-step", 1, "step between counts")
	target := fs.Float64("target-p95", 0, "sweep: p95 target in seconds")
	metric := fs.String("metric", bench.MetricGPUWait, "sweep: what the target is about: wait, gpu_wait or turnaround")
	optimize := fs.String("optimize", "", `"cost": search the counts of every node group for the cheapest fleet that meets every class's SLOs`)
	optMin := fs.String("optimize-min", "0", "optimize: smallest count of each group: N for all, or group=N,… (others 0)")
	optMax := fs.String("optimize-max", "", "optimize: largest count of each group: N for all, or group=N,… (others: twice the fleet's count)")
	var tw twinFlags
	tw.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if *format != "table" && *format != "json" && *format != "csv" {
		return fmt.Errorf("bench sim: -format must be table, json or csv, got %q", *format)
	}
	if err := simFlagsApply(fs, *sweep != "", *optimize != "", tw.farm != ""); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *repl < 1 {
		return fmt.Errorf("bench sim: -replications: must be 1 to 1000 (1: a single run), got %d", *repl)
	}
	fleet, wl, err := tw.inputs(*fleetPath, *workloadPath)
	if err != nil {
		return err
	}
	// A simulation allocates many short-lived objects and holds little:
	// collecting less often buys speed for memory the run has.
	debug.SetGCPercent(400)
	cfg := bench.SimConfig{Hours: *hours, Seed: *seed, WarmupHours: *warmup, Replications: *repl}
	times := ""
	if *repl > 1 {
		times = fmt.Sprintf(" × %d seeds", *repl)
	}
	if *optimize != "" {
		if *optimize != "cost" {
			return fmt.Errorf("bench sim: -optimize must be cost, got %q", *optimize)
		}
		if *sweep != "" || *svg != "" {
			return fmt.Errorf("bench sim: -optimize goes without -sweep and -svg")
		}
		oc := bench.OptimizeConfig{}
		if oc.Min, err = groupCounts(fleet, "-optimize-min", *optMin); err != nil {
			return err
		}
		if oc.Max, err = groupCounts(fleet, "-optimize-max", *optMax); err != nil {
			return err
		}
		return runOptimize(fleet, wl, cfg, oc, *format)
	}
	if *sweep != "" {
		// An explicit 0 is refused like a negative target: without the
		// flag the sweep sizes for the classes' SLOs, which a planner who
		// typed a target did not ask for.
		if set["target-p95"] && *target <= 0 {
			return fmt.Errorf("bench sim: -target-p95 must be > 0 seconds, got %v (leave it out to size for every class's SLOs)", *target)
		}
		if *sweepStep < 1 {
			return fmt.Errorf("bench sim: -sweep-step must be >= 1, got %d", *sweepStep)
		}
		return runSweep(fleet, wl, cfg, bench.SweepConfig{Group: *sweep, Min: *sweepMin, Max: *sweepMax, Step: *sweepStep,
			Metric: *metric, TargetP95: *target}, *format, *svg)
	}
	if err := checkSVGPath(*svg); err != nil {
		return err
	}
	bar := newProgress(fmt.Sprintf("simulating %s%s", fmtHours(*hours), times), int64(cfg.Hours*60)*int64(max(*repl, 1)))
	cfg.Progress = func(done, _ time.Duration) { bar.set(int64(done.Minutes())) }
	start := time.Now()
	rep, err := bench.Simulate(fleet, wl, cfg)
	bar.finish()
	if err != nil {
		return err
	}
	el := time.Since(start)
	runs := float64(max(*repl, 1))
	fmt.Fprintf(os.Stderr, "simulated %s%s in %s (%.0fx real time)\n", fmtHours(*hours), times, el.Round(time.Millisecond), runs*cfg.Hours*3600/el.Seconds())
	return writeReport(rep, *format, *svg)
}

// simReport is a simulation's or a sweep's report.
type simReport interface {
	fmt.Stringer
	WriteCSV(io.Writer) error
	WriteSVG(io.Writer) error
}

var (
	_ simReport = bench.SimReport{}
	_ simReport = bench.SweepResult{}
)

// fmtHours writes a simulated span as the report does: whole hours when
// that is exact enough, else minutes or seconds ("0.001 h" is 3.6 s, not
// "0 h").
func fmtHours(h float64) string {
	switch {
	case h >= 10:
		return fmt.Sprintf("%.0f h", h)
	case h >= 1:
		return strconv.FormatFloat(h, 'g', 3, 64) + " h"
	}
	return (time.Duration(h * float64(time.Hour))).Round(time.Millisecond).String()
}

// writeReport prints r in format, then draws it into svg (when named):
// the report comes first so that a chart that cannot be written costs
// the chart, not the run's figures.
func writeReport(r simReport, format, svg string) error {
	var err error
	switch format {
	case "json":
		err = writeJSON(r)
	case "csv":
		err = r.WriteCSV(os.Stdout)
	default:
		_, err = fmt.Print(r.String())
	}
	if err != nil || svg == "" {
		return err
	}
	if err := writeFileAtomic(svg, r.WriteSVG); err != nil {
		return fmt.Errorf("bench sim: -svg: %w (the report above is complete)", err)
	}
	return nil
}

// checkSVGPath refuses, before a run, an -svg the chart could not be
// written to: its directory must exist and take a new file. It writes
// and removes a temporary file there, which is what writeFileAtomic does.
func checkSVGPath(path string) error {
	if path == "" {
		return nil
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("bench sim: -svg %s is a directory; give a file name", path)
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".vidfarm-svg-*")
	if err != nil {
		return fmt.Errorf("bench sim: -svg %s: the chart cannot be written there: %w", path, err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

func runSweep(fleet bench.Fleet, wl bench.Workload, cfg bench.SimConfig, sc bench.SweepConfig, format, svg string) error {
	if sc.TargetP95 < 0 {
		return fmt.Errorf("bench sim: -target-p95 must be > 0 seconds, got %v", sc.TargetP95)
	}
	if sc.TargetP95 == 0 && svg != "" {
		return fmt.Errorf("bench sim: -svg draws a sweep with -target-p95; a sweep by class SLOs has no chart")
	}
	if sc.Max == 0 {
		for _, g := range fleet.Groups {
			if g.Name == sc.Group {
				sc.Max = 2 * g.Count
			}
		}
	}
	if svg != "" {
		if sc.Step > 0 && sc.Max >= sc.Min && (sc.Max-sc.Min)/sc.Step+1 < 2 {
			return fmt.Errorf("bench sim: -svg: a sweep chart needs at least two sizes, and -sweep-min %d, -sweep-max %d and -sweep-step %d give one", sc.Min, sc.Max, sc.Step)
		}
		if err := checkSVGPath(svg); err != nil {
			return err
		}
	}
	var bar *progress
	if sc.Max >= sc.Min && sc.Step > 0 {
		bar = newProgress(fmt.Sprintf("sweeping %s", sc.Group), int64((sc.Max-sc.Min)/sc.Step+1)*int64(max(cfg.Replications, 1)))
		sc.Progress = func(done, _ int) { bar.set(int64(done)) }
	}
	res, err := bench.Sweep(fleet, wl, cfg, sc)
	if bar != nil {
		bar.finish()
	}
	if err != nil {
		return err
	}
	return writeReport(res, format, svg)
}

// groupCounts parses "N" (every group) or "group=N,…" (the named ones,
// each once: a group given twice is a slip, and which count won would be
// the parser's secret).
func groupCounts(fleet bench.Fleet, flagName, v string) (map[string]int, error) {
	if v == "" {
		return nil, nil
	}
	m := map[string]int{}
	if n, err := strconv.Atoi(v); err == nil {
		for _, g := range fleet.Groups {
			m[g.Name] = n
		}
		return m, nil
	}
	for _, kv := range strings.Split(v, ",") {
		name, num, ok := strings.Cut(kv, "=")
		n, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("bench sim: %s: want N or group=N,…, got %q", flagName, v)
		}
		name = strings.TrimSpace(name)
		if _, twice := m[name]; twice {
			return nil, fmt.Errorf("bench sim: %s: group %q given twice in %q; give each group once", flagName, name, v)
		}
		m[name] = n
	}
	return m, nil
}

func runOptimize(fleet bench.Fleet, wl bench.Workload, cfg bench.SimConfig, oc bench.OptimizeConfig, format string) error {
	var bar *progress
	oc.Progress = func(done, total int) {
		if bar == nil {
			bar = newProgress("searching the cheapest fleet", int64(total))
		}
		bar.set(int64(done))
	}
	start := time.Now()
	res, err := bench.Optimize(fleet, wl, cfg, oc)
	if bar != nil {
		bar.finish()
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "tried %d of %d fleets in %s\n", len(res.Tried), res.Candidates, time.Since(start).Round(time.Millisecond))
	switch format {
	case "json":
		return writeJSON(res)
	case "csv":
		return res.WriteCSV(os.Stdout)
	}
	fmt.Print(res.String())
	return nil
}

func decodeFile[T any](path string, decode func(io.Reader) (T, error)) (T, error) {
	var zero T
	f, err := os.Open(path)
	if err != nil {
		return zero, err
	}
	defer f.Close()
	v, err := decode(f)
	if err != nil {
		return zero, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// writeFileAtomic writes path through a temporary file in its directory,
// renamed over it once complete: a failed write leaves no empty or half
// chart, and an older chart at path stays until the new one is whole.
func writeFileAtomic(path string, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".vidfarm-svg-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		// CreateTemp makes the file 0600; a chart is for sharing.
		err = os.Chmod(tmp, 0o644)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func writeJSON(v any) error {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// simModeFlags are the flags of one mode of bench sim: given without it,
// they would be ignored, and a planner would read a plain run's report as
// the answer to the question the flag asked.
var simModeFlags = map[string][]string{
	"-sweep":     {"sweep-min", "sweep-max", "sweep-step", "target-p95", "metric"},
	"-optimize":  {"optimize-min", "optimize-max"},
	"-from-farm": {"since", "twin-out", "admin-token"},
}

// simFlagsApply refuses a mode's flags given without the mode.
func simFlagsApply(fs *flag.FlagSet, sweeping, optimizing, twin bool) error {
	on := map[string]bool{"-sweep": sweeping, "-optimize": optimizing, "-from-farm": twin}
	var err error
	fs.Visit(func(f *flag.Flag) {
		for mode, names := range simModeFlags {
			if !on[mode] && slices.Contains(names, f.Name) && err == nil {
				err = fmt.Errorf("bench sim: -%s applies only with %s", f.Name, mode)
			}
		}
	})
	return err
}
