package bench

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"
)

var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/golden from this code")

// TestSimGoldenSingleRun: a run with one replication writes the table,
// CSV, JSON and SVG that the simulator wrote before replications existed
// (testdata/golden, made by that code), byte for byte; so does a sweep.
// -update-golden rewrites them after an intended change.
func TestSimGoldenSingleRun(t *testing.T) {
	fleet, wl := loadExamples(t)
	wl.SLOs = []SLO{{Metric: MetricGPUWait, Seconds: 120}}
	rep, err := Simulate(fleet, wl, SimConfig{Hours: 2, Seed: 7, Replications: 1})
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "sim", rep)
	mfleet, mwl := mmcSetup(1, 3.2)
	sw, err := Sweep(mfleet, mwl, SimConfig{Hours: 10, Seed: 5, WarmupHours: 1, Replications: 1},
		SweepConfig{Group: "h100", Min: 3, Max: 7, TargetP95: 100})
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "sweep", sw)
}

// simOutput is a report in every format.
type simOutput interface {
	String() string
	WriteCSV(io.Writer) error
	WriteSVG(io.Writer) error
}

// outputs renders r as table, CSV, indented JSON and SVG.
func outputs(t *testing.T, r simOutput) map[string][]byte {
	t.Helper()
	var csvOut, svg bytes.Buffer
	if err := r.WriteCSV(&csvOut); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteSVG(&svg); err != nil {
		t.Fatal(err)
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return map[string][]byte{"txt": []byte(r.String()), "csv": csvOut.Bytes(), "json": js, "svg": svg.Bytes()}
}

func checkGolden(t *testing.T, name string, r simOutput) {
	t.Helper()
	for ext, got := range outputs(t, r) {
		path := filepath.Join("testdata", "golden", name+"."+ext)
		if *updateGolden {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from %s (%d bytes, want %d)", name+"."+ext, path, len(got), len(want))
		}
	}
}
