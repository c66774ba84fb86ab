package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/bench"
	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/models"
)

// TestE2ETwinOfTheFarm: a farm runs a known workload (six manual videos,
// whose renders take 1.5 s more than ffmpeg's encode); `vidfarm bench sim
// --from-farm` makes a twin of it and simulates it. The twin's arrival
// rate is the six videos over the farm's few minutes (not over the hour
// --since asked for, most of which came before the farm), its fleet is the farm's one node, and
// its tasks take what the agent measured them to take, within 5%.
func TestE2ETwinOfTheFarm(t *testing.T) {
	const videos = 6
	f := newE2EFarm(t, videos*manualPrice)
	runner := writeScript(t, f.dir, "slow-runner.sh", `#!/bin/sh
set -eu
out=$(sed -n 's/.*"output_path":"\([^"]*\)".*/\1/p')
echo "progress 10"
sleep 1.5
ffmpeg -v error -nostdin -y -f lavfi -i "testsrc2=s=854x480:r=24:d=5" -c:v libx264 -preset ultrafast -pix_fmt yuv420p "$out" >&2
echo "progress 100"
`)
	a := f.startAgent("agent-a", "--runner", e2eModel+"="+runner)
	var ids []string
	for i := range videos {
		ids = append(ids, f.createVideo(manualBody("a twin, take "+string(rune('a'+i)), ""))["id"].(string))
	}
	for _, id := range ids {
		f.waitStatus(id, "completed", 90*time.Second)
	}
	// What the agent measured: each task from its lease to its report.
	mean := map[string]float64{}
	n := map[string]int{}
	for _, l := range findLogs(a.proc, "task completed") {
		d, err := time.ParseDuration(l["elapsed"].(string))
		if err != nil {
			t.Fatalf("task completed without an elapsed time: %v", l)
		}
		k := l["kind"].(string)
		mean[k] += d.Seconds()
		n[k]++
	}
	for k := range mean {
		mean[k] /= float64(n[k])
	}
	if n["render"] != videos || n["finalize"] != videos {
		t.Fatalf("the agent completed %v tasks; want %d renders and finalizes", n, videos)
	}

	var bad *apierr.Error
	if _, err := f.srv.admin.Do(context.Background(), "GET", "/admin/v1/history?since=forever", nil); !errors.As(err, &bad) ||
		bad.Status != 400 || !strings.Contains(bad.Message, "since") {
		t.Errorf("history since=forever: %v, want 400 about since", err)
	}
	out := filepath.Join(f.dir, "twin")
	cmd := exec.Command(vidfarmBinary(t), "bench", "sim", "--from-farm", f.srv.admin.Server, "--admin-token", e2eAdminToken,
		"--since", "1h", "--twin-out", out, "--hours", "2", "--replications", "1", "--scale-arrivals", "2", "--add-nodes", "virtual=1")
	var said strings.Builder
	cmd.Stderr = &said
	report, err := cmd.Output()
	if err != nil {
		t.Fatalf("bench sim --from-farm: %v\n%s", err, said.String())
	}
	// The farm is minutes old, not the hour --since asked for: the twin's
	// window starts when the farm began (its account), and says so.
	var counted int
	var window string
	line := said.String()[strings.Index(said.String(), "twin: "):]
	if _, err := fmt.Sscanf(line, "twin: %d videos in %s", &counted, &window); err != nil || counted != videos || !strings.Contains(line, "from when the farm began") {
		t.Fatalf("the twin's line: %q (%v)", line, err)
	}
	life, err := time.ParseDuration(window)
	if err != nil || life <= 0 || life >= time.Hour {
		t.Fatalf("the twin's window %q (%v): want the farm's few minutes", window, err)
	}
	// --add-nodes virtual=1 doubled the farm's one node for the run.
	if !strings.Contains(string(report), "2 nodes, 8 GPUs") {
		t.Errorf("the report is not of the twin with one node added:\n%s", report)
	}
	fleet, err := decodeFile(filepath.Join(out, "fleet.yaml"), bench.DecodeFleet)
	if err != nil {
		t.Fatal(err)
	}
	wl, err := decodeFile(filepath.Join(out, "workload.yaml"), bench.DecodeWorkload)
	if err != nil {
		t.Fatal(err)
	}

	// The files are the farm as it was; the what-ifs only went into the run.
	if r, want := wl.Arrival.RatePerHour, videos/life.Hours(); math.Abs(r-want) > 0.05*want || wl.ManualShare != 1 {
		t.Errorf("twin arrivals: %v an hour, manual share %v; want %.1f an hour (%d videos in %s), all manual", r, wl.ManualShare, want, videos, life)
	}
	if len(wl.Manual) != 1 || wl.Manual[0].Model != e2eModel || wl.Manual[0].Resolution != e2eResolution || wl.Manual[0].Durations[0] != 5 {
		t.Errorf("twin mix: %+v", wl.Manual)
	}
	if len(fleet.Groups) != 1 || fleet.Groups[0].Count != 1 || fleet.Groups[0].GPUsPerNode != 4 || fleet.Groups[0].GPUModel != "virtual" {
		t.Fatalf("twin fleet: %+v; want the one agent with its 4 virtual GPUs", fleet.Groups)
	}
	m, _ := models.Get(e2eModel)
	twinRender := fleet.TimeScale[e2eModel+"@virtual"] * m.GPUSeconds(e2eResolution, 5) / float64(max(m.Requirements.GPUCount, 1))
	if math.Abs(twinRender-mean["render"]) > 0.05*mean["render"] {
		t.Errorf("a twin render takes %.3f s; the agent measured %.3f s", twinRender, mean["render"])
	}
	// The farm's measure also holds the lease's answer and the report's
	// commit, which the agent does not see: within 5% or 100 ms.
	twinFinalize := fleet.TimeScale["finalize"] * (2 + 0.2*5)
	if d := math.Abs(twinFinalize - mean["finalize"]); d > max(0.05*mean["finalize"], 0.1) {
		t.Errorf("a twin finalize takes %.3f s; the agent measured %.3f s", twinFinalize, mean["finalize"])
	}
}
