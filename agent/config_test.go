package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/vidfarm/vidfarm/pipeline"
	"github.com/vidfarm/vidfarm/scheduler"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

func TestParseRunners(t *testing.T) {
	got, err := ParseRunners("wan-2.2-a14b=/opt/runners/wan.sh --fast", "veo-3 = /opt/veo ;sora-2=/bin/sora;",
		"kling-2.1-master=https://vidfarm:pw@models.internal:8443/render")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"wan-2.2-a14b": {"/opt/runners/wan.sh", "--fast"},
		"veo-3":        {"/opt/veo"},
		"sora-2":       {"/bin/sora"},

		"kling-2.1-master": {"https://vidfarm:pw@models.internal:8443/render"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParseRunners = %v, want %v", got, want)
	}
	// A URL's password stays out of the error, which ends in a log.
	if _, err := ParseRunners("veo-3=https://vidfarm:s3cret@models.internal/render --fast"); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("a URL runner with arguments: %v, want an error without the password", err)
	}
	for _, bad := range []string{"wan-2.2-a14b", "=cmd", "veo-3=", "veo-3=a;veo-3=b",
		"veo-3=http:///render", "veo-3=https://host/render --fast", "veo-3=HTTP://"} {
		if _, err := ParseRunners(bad); !errors.Is(err, ErrConfig) {
			t.Errorf("ParseRunners(%q) = %v, want ErrConfig", bad, err)
		}
	}
}

func TestConfigDefaultsAndErrors(t *testing.T) {
	c, err := Config{Server: "http://cp:7443/", Token: "t"}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if c.Server != "http://cp:7443" || c.CPUSlots < 1 || c.VirtualGPUs != DefaultVirtualGPUs || c.DrainTimeout != DefaultDrainTimeout ||
		len(c.Models) != 32 || c.WorkDir == "" || c.Tools == nil || c.Logger == nil ||
		c.HTTPClient == nil || c.RunnerHTTPClient == nil || c.Discover == nil || c.RetryBackoff != DefaultRetryBackoff {
		t.Errorf("defaults: %+v", c)
	}
	for name, cfg := range map[string]Config{
		"no server":              {Token: "t"},
		"bad server":             {Server: "cp:7443", Token: "t"},
		"bad member":             {Server: "http://cp", Members: []string{"http://cp2", "cp3:7443"}, Token: "t"},
		"empty member":           {Server: "http://cp", Members: []string{""}, Token: "t"},
		"no token":               {Server: "http://cp"},
		"unknown model":          {Server: "http://cp", Token: "t", Models: []string{"gpt-video"}},
		"runner no model":        {Server: "http://cp", Token: "t", Runners: map[string][]string{"gpt-video": {"x"}}},
		"runner no cmd":          {Server: "http://cp", Token: "t", Runners: map[string][]string{"veo-3": {}}},
		"runner bad url":         {Server: "http://cp", Token: "t", Runners: map[string][]string{"veo-3": {"https://"}}},
		"runner program missing": {Server: "http://cp", Token: "t", Runners: map[string][]string{"veo-3": {"/nonexistent/runner.sh"}}},
		"runner not on PATH":     {Server: "http://cp", Token: "t", Runners: map[string][]string{"veo-3": {"no-such-runner-program"}}},
		"negative max":           {Server: "http://cp", Token: "t", WorkDirMaxBytes: -1},
		"too many vgpus":         {Server: "http://cp", Token: "t", VirtualGPUs: 65},
	} {
		if _, err := cfg.withDefaults(); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: error = %v, want ErrConfig", name, err)
		}
	}
}

// TestConfigErrorsNameFlags: a Config mistake names the vidfarm agent flag
// the user typed (the field only where it has none), never a Go field, and
// wraps ErrConfig.
func TestConfigErrorsNameFlags(t *testing.T) {
	t.Parallel()
	ok := Config{Server: "http://cp", Token: "t"}
	with := func(f func(*Config)) Config { c := ok; f(&c); return c }
	tests := []struct {
		cfg  Config
		want string
	}{
		{Config{Token: "t"}, "--server (the control plane's agent listener URL) is required"},
		{Config{Server: "cp:7443", Token: "t"}, `--server "cp:7443": want an http or https URL such as https://cp.example.com:7443`},
		{with(func(c *Config) { c.Members = []string{"http://cp2", "cp3:7443"} }),
			`--server: member "cp3:7443": want an http or https URL such as https://cp2.example.com:7443`},
		{Config{Server: "http://cp"}, "--token (the agent registration token) is required"},
		{with(func(c *Config) { c.WorkDirMaxBytes = -1 }), "--work-dir-max-bytes -1: want 0 (no bound) or more"},
		{with(func(c *Config) { c.Workers = -1 }), "--workers -1: want 0 (default) or more"},
		{with(func(c *Config) { c.CPUSlots = -2 }), "CPUSlots -2: want 0 (default) or more"}, // no flag
		{with(func(c *Config) { c.VirtualGPUs = 65 }), "--virtual-gpus 65: want 0 to 64"},
		{with(func(c *Config) { c.VirtualGPUs = -1 }), "--virtual-gpus -1: want 0 to 64"},
		{with(func(c *Config) { c.DrainTimeout = -time.Second }), "--drain-timeout -1s: want 0 or more"},
		{with(func(c *Config) { c.Models = []string{"gpt-video"} }), `Models: "gpt-video" is not a catalog model`}, // no flag
		{with(func(c *Config) { c.Runners = map[string][]string{"gpt-video": {"x"}} }),
			`--runner: model "gpt-video" is not a catalog model (see GET /v1/models)`},
		{with(func(c *Config) { c.Runners = map[string][]string{"veo-3": {}} }), `--runner: model "veo-3" has no command`},
		{with(func(c *Config) { c.Runners = map[string][]string{"veo-3": {"https://"}} }),
			`--runner: model "veo-3": "https://" is not a usable http(s) URL (scheme and host needed)`},
		{with(func(c *Config) { c.Runners = map[string][]string{"veo-3": {"no-such-runner-program"}} }),
			`--runner: model "veo-3": runner program "no-such-runner-program": exec: "no-such-runner-program": executable file not found in $PATH`},
	}
	for _, tc := range tests {
		_, err := tc.cfg.withDefaults()
		if want := "invalid agent configuration: " + tc.want; err == nil || err.Error() != want || !errors.Is(err, ErrConfig) {
			t.Errorf("error = %v\n           want %s", err, want)
		}
	}
	for spec, want := range map[string]string{
		"wan-2.2-a14b":             `--runner "wan-2.2-a14b": want MODEL=COMMAND, e.g. wan-2.2-a14b=/opt/runners/wan.sh --fast`,
		"veo-3=a;veo-3=b":          `--runner: model "veo-3" given twice`,
		"veo-3=https://h/r --fast": `--runner "veo-3=https://h/r --fast": a URL runner takes no arguments, got ["--fast"]`,
	} {
		_, err := ParseRunners(spec)
		if want = "invalid agent configuration: " + want; err == nil || err.Error() != want || !errors.Is(err, ErrConfig) {
			t.Errorf("ParseRunners(%q) = %v\n           want %s", spec, err, want)
		}
	}
}

func TestSchedulerGPUs(t *testing.T) {
	got := SchedulerGPUs(migCapacity())
	want := []scheduler.GPU{
		{ID: "GPU-a1000000-0000-0000-0000-000000000000", MemoryTotalGB: 42.94, MemoryFreeGB: 42.94, Model: "NVIDIA A100-SXM4-40GB"},
		{ID: "MIG-11111111-0000-0000-0000-000000000000", MemoryTotalGB: 20.93, MemoryFreeGB: 19.92, MIG: true, Model: "NVIDIA A100-SXM4-40GB MIG 3g.20gb"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("SchedulerGPUs = %+v, want %+v", got, want)
	}
	if g := gb(81559); g < 80 { // an H100 80GB meets an 80 GB requirement
		t.Errorf("gb(81559 MiB) = %v", g)
	}
}

func TestWireCapacity(t *testing.T) {
	cfg := Config{CPUSlots: 3, Procedural: true, VirtualGPUs: 2, Models: []string{"veo-3"}}
	cpu, _ := cpuMachine()
	w := wireCapacity(cpu, cfg)
	if !w.Virtual || len(w.GPUs) != 2 || w.GPUs[1].ID != "virtual-1" || w.CPUSlots != 3 || w.Hostname != "test-node" {
		t.Errorf("procedural CPU node: %+v", w)
	}
	cfg.Procedural = false
	if w := wireCapacity(cpu, cfg); w.Virtual || w.GPUs == nil || len(w.GPUs) != 0 {
		t.Errorf("CPU-only node: %+v", w)
	}
	cfg.Procedural = true
	if w := wireCapacity(migCapacity(), cfg); w.Virtual || len(w.GPUs) != 2 {
		t.Errorf("a GPU node advertised virtual GPUs: %+v", w)
	}
}

func TestFailReason(t *testing.T) {
	err := fmt.Errorf("render: %w", &pipeline.ToolError{Tool: "ffmpeg", ExitCode: 1, Stderr: "line one\n\n  line two\t end\n"})
	if got := failReason(err, ""); got != "render: ffmpeg exited with status 1: line one line two end" {
		t.Errorf("failReason = %q", got)
	}
	// The customer reads it: no path of the node's work dir, in any form.
	work := t.TempDir()
	link := filepath.Join(t.TempDir(), "work-link")
	if err := os.Symlink(work, link); err != nil {
		t.Fatal(err)
	}
	stderr := fmt.Sprintf("%s/task-1/in.mp4: Invalid data found\nError opening input file %s/task-1/scene.mp4.", work, link)
	err = &pipeline.ToolError{Tool: "/usr/bin/ffmpeg", ExitCode: 1, Stderr: stderr}
	if got, want := failReason(err, link), "ffmpeg exited with status 1: task-1/in.mp4: Invalid data found Error opening input file task-1/scene.mp4."; got != want {
		t.Errorf("failReason = %q, want %q", got, want)
	}
}

// TestFailReasonTooLong: a reason over maxReasonRunes keeps the start of
// its first line (what failed) and its end (where a tool's stderr says
// why), an ellipsis between, cut on rune boundaries.
func TestFailReasonTooLong(t *testing.T) {
	traceback := "Traceback (most recent call last):\n" + strings.Repeat("  File \"/opt/model/pipeline.py\", line 812, in forward\n", 40) +
		"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
	tests := []struct {
		name       string
		err        error
		head, tail string // what the reason starts and ends with
	}{
		{"a runner's traceback", fmt.Errorf("render: external runner wan.sh for model wan-2.2-a14b: %w",
			&pipeline.ToolError{Tool: "/opt/wan.sh", ExitCode: 1, Stderr: traceback}),
			"render: external runner wan.sh for model wan-2.2-a14b: wan.sh exited with status 1: Traceback (most recent call last): … ",
			"in forward torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"},
		{"multi-byte runes", errors.New("ä" + strings.Repeat("é", 2000) + "ö"), "ä", "éö"},
		{"a first line over the head's bound", errors.New(strings.Repeat("a", 1000) + "\n" + strings.Repeat("b", 1000) + " the end"),
			strings.Repeat("a", maxReasonHeadRunes) + " … b", "b the end"},
	}
	for _, tc := range tests {
		got := failReason(tc.err, "")
		if n := utf8.RuneCountInString(got); n > maxReasonRunes || n < maxReasonRunes-2 || !utf8.ValidString(got) {
			t.Errorf("%s: %d runes (valid UTF-8: %v), want %d", tc.name, n, utf8.ValidString(got), maxReasonRunes)
		}
		if !strings.HasPrefix(got, tc.head) || !strings.HasSuffix(got, tc.tail) || strings.Count(got, "…") != 1 {
			t.Errorf("%s: reason %q, want it to start %q and end %q with one ellipsis", tc.name, got, tc.head, tc.tail)
		}
	}
}

func TestSceneIndexAndSeed(t *testing.T) {
	for name, want := range map[string]int{"scene-0001": 1, "scene-0042": 42, "scene-12345": 12345} {
		if got, err := sceneIndex(name); err != nil || got != want {
			t.Errorf("sceneIndex(%q) = %d, %v", name, got, err)
		}
		if sceneName(want) != name && want < 10000 {
			t.Errorf("sceneName(%d) = %q", want, sceneName(want))
		}
	}
	for _, bad := range []string{"scene-0000", "scene-", "scene-x", "render", "scene--1"} {
		if _, err := sceneIndex(bad); !errors.Is(err, errBadAssignment) {
			t.Errorf("sceneIndex(%q) = %v", bad, err)
		}
	}
	if s1, again := seed("v1", 1), seed("v1", 1); s1 != again || s1 == seed("v1", 2) || s1 == seed("v2", 1) {
		t.Error("seeds are not derived from video id and index")
	}
	if s := seed("v1", 3); s < 0 || s > 1<<31-1 {
		t.Errorf("seed %d out of range", s)
	}
}

func TestImageInputs(t *testing.T) {
	for _, tc := range []struct {
		v    wire.Video
		op   string
		urls []string
	}{
		{wire.Video{}, pipeline.TextToVideo, nil},
		{wire.Video{VideoOptions: wire.VideoOptions{ImageURL: "https://a/1.png"}}, pipeline.ImageToVideo, []string{"https://a/1.png"}},
		{wire.Video{VideoOptions: wire.VideoOptions{FirstFrameURL: "https://a/f.png", LastFrameURL: "https://a/l.png"}}, pipeline.FirstLastFrame, []string{"https://a/f.png", "https://a/l.png"}},
		{wire.Video{VideoOptions: wire.VideoOptions{ImageURLs: []string{"https://a/1", "https://a/2"}}}, pipeline.MultipleImages, []string{"https://a/1", "https://a/2"}},
		{wire.Video{Operation: pipeline.ImageToVideo, VideoOptions: wire.VideoOptions{ImageURL: "https://a/1.png", ImageURLs: []string{"x"}}}, pipeline.ImageToVideo, []string{"https://a/1.png"}},
	} {
		op, urls := imageInputs(&tc.v)
		if op != tc.op || !reflect.DeepEqual(urls, tc.urls) {
			t.Errorf("imageInputs(%+v) = %s %v, want %s %v", tc.v, op, urls, tc.op, tc.urls)
		}
	}
}

func TestProtocolErrors(t *testing.T) {
	if p := blobPath("videos/vid 1/scene-0001/clip.mp4"); p != "/agent/v1/blobs/videos/vid%201/scene-0001/clip.mp4" {
		t.Errorf("blobPath = %s", p)
	}
	if p := taskPath("vid_1/render", "complete"); p != "/agent/v1/tasks/vid_1%2Frender/complete" {
		t.Errorf("taskPath = %s", p)
	}
	stale := &apiError{Status: 409, Code: wire.CodeStaleLease}
	conflict := &apiError{Status: 409, task: true}
	blobConflict := &apiError{Status: 409}
	noRoute := &apiError{Status: 404, task: true}
	if !errors.Is(fmt.Errorf("x: %w", stale), errStaleLease) || !errors.Is(conflict, errStaleLease) ||
		errors.Is(blobConflict, errStaleLease) || errors.Is(noRoute, errStaleLease) {
		t.Error("stale lease matching")
	}
	if !errors.Is(&apiError{Status: 401}, errUnauthorized) || errors.Is(stale, errUnauthorized) {
		t.Error("401 matching")
	}
	for err, want := range map[error]bool{
		&apiError{Status: 503}:   true,
		&apiError{Status: 429}:   true,
		&apiError{Status: 400}:   false,
		stale:                    false,
		errors.New("conn reset"): true,
	} {
		if transient(err) != want {
			t.Errorf("transient(%v) = %v", err, !want)
		}
	}
}
