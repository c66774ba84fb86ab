package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/asticode/go-astisub"

	"github.com/vidfarm/vidfarm/controlplane/admin"
	"github.com/vidfarm/vidfarm/pipeline"
)

// The end-to-end tests run the real binary: one `vidfarm server` and one or
// more `vidfarm agent` processes per test, talking over loopback. They reuse
// the durability test's binary build (vidfarmBinary) and its proc type.

const (
	e2eAdminToken = "e2e-admin-token"
	e2eAgentToken = "e2e-agent-token"
	// e2eModel offers every operation at 480p (2 credits a second), so each
	// manual video is a small 854x480 render.
	e2eModel      = "seedance-1.0-lite"
	e2eResolution = "480p"
	e2eAspect     = "16:9"
	// e2eLease is the server's lease; e2eHeartbeat how often agents renew.
	e2eLease     = 3 * time.Second
	e2eHeartbeat = 500 * time.Millisecond
	// e2ePoll is how often a test polls a condition.
	e2ePoll = 100 * time.Millisecond
)

// requireE2E skips in -short mode, and when a tool the agents need is missing
// unless VIDFARM_REQUIRE_TOOLS is set (then it fails).
func requireE2E(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the binary: a server and render agents")
	}
	for _, n := range []string{"ffmpeg", "ffprobe", "espeak-ng"} {
		if _, err := exec.LookPath(n); err != nil {
			if os.Getenv("VIDFARM_REQUIRE_TOOLS") != "" {
				t.Fatalf("%s is not installed and VIDFARM_REQUIRE_TOOLS is set", n)
			}
			t.Skipf("%s is not installed (set VIDFARM_REQUIRE_TOOLS to make this a failure)", n)
		}
	}
}

// startProc runs the binary with args and env (nil: the test's environment
// without VIDFARM_ variables) and waits for the first JSON log line whose
// msg is readyMsg, which it returns. Every stderr line is kept in p.stderr.
func startProc(t *testing.T, what string, args, env []string, readyMsg string) (*proc, map[string]any) {
	t.Helper()
	return startProcBin(t, vidfarmBinary(t), what, args, env, readyMsg)
}

// startProcBin is startProc with another binary (an earlier release).
func startProcBin(t *testing.T, bin, what string, args, env []string, readyMsg string) (*proc, map[string]any) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "VIDFARM_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{t: t, cmd: cmd, stderr: &lockedBuffer{}, exited: make(chan error, 1)}
	ready := make(chan map[string]any, 1)
	scanDone := make(chan struct{})
	go func() {
		defer close(scanDone)
		sc := bufio.NewScanner(pipe)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Bytes()
			p.stderr.Write(append(bytes.Clone(line), '\n'))
			var m map[string]any
			if json.Unmarshal(line, &m) == nil && m["msg"] == readyMsg {
				select {
				case ready <- m:
				default:
				}
			}
		}
	}()
	gone := make(chan struct{}) // closed once the process has been waited for
	go func() {
		<-scanDone // Wait must not close the pipe before the scanner has read it
		err := cmd.Wait()
		close(gone)
		p.exited <- err
	}()
	t.Cleanup(func() {
		select {
		case <-gone: // killed by the test
		default:
			// A stopped process cannot drain: let it run, then stop it the
			// nice way (agents deregister and kill their runners' process
			// groups); kill it if that takes too long.
			_ = cmd.Process.Signal(syscall.SIGCONT)
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-gone:
			case <-time.After(15 * time.Second):
				_ = cmd.Process.Kill()
				<-gone
			}
		}
		switch {
		case os.Getenv("VIDFARM_E2E_LOGS") != "":
			t.Logf("%s log:\n%s", what, p.stderr)
		case t.Failed():
			t.Logf("%s log (tail):\n%s", what, tail(p.stderr.String(), 60))
		}
	})
	select {
	case m := <-ready:
		return p, m
	case err := <-p.exited:
		t.Fatalf("%s exited before it was ready (%v):\n%s", what, err, p.stderr)
	case <-time.After(60 * time.Second):
		t.Fatalf("%s not ready after 60 s:\n%s", what, p.stderr)
	}
	return nil, nil
}

// tail is the last n lines of a log, leaving out the test's own polls of a
// video (one line every e2ePoll).
func tail(s string, n int) string {
	var lines []string
	for line := range strings.SplitSeq(strings.TrimRight(s, "\n"), "\n") {
		if !strings.Contains(line, `"route":"/v1/videos/{id}"`) {
			lines = append(lines, line)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// logs parses p's JSON log lines so far.
func logs(p *proc) []map[string]any {
	var out []map[string]any
	for line := range strings.SplitSeq(p.stderr.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// findLogs returns p's log lines with message msg whose fields include every
// key/value pair of kv (compared as text).
func findLogs(p *proc, msg string, kv ...string) []map[string]any {
	var out []map[string]any
next:
	for _, m := range logs(p) {
		if m["msg"] != msg {
			continue
		}
		for i := 0; i+1 < len(kv); i += 2 {
			if fmt.Sprint(m[kv[i]]) != kv[i+1] {
				continue next
			}
		}
		out = append(out, m)
	}
	return out
}

// eventually polls cond every e2ePoll until it holds or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", timeout, what)
		}
		time.Sleep(e2ePoll) // polling interval, not a wait for an event
	}
}

// e2eFarm is one test's farm: the server, its agents, an account and the
// HTTPS server the input images come from.
type e2eFarm struct {
	t        *testing.T
	dir      string
	srv      *proc
	agentURL string
	certFile string // PEM of the image server's certificate, for the agents
	images   *httptest.Server
	hitsMu   sync.Mutex
	hits     map[string]int // image path -> downloads by agents

	accountID string
	apiKey    string
}

// newE2EFarm starts the image server and `vidfarm server` with short leases,
// and creates a Pro account holding grant credits.
func newE2EFarm(t *testing.T, grant int64) *e2eFarm {
	t.Helper()
	requireE2E(t)
	f := &e2eFarm{t: t, dir: t.TempDir(), hits: map[string]int{}}
	f.startImages()
	f.srv, _ = f.startServer()
	a, err := f.srv.admin.CreateAccount(context.Background(), "e2e", "pro", grant)
	if err != nil {
		t.Fatalf("create account: %v", err)
	}
	f.accountID, f.apiKey = a.AccountID, a.APIKey
	return f
}

func (f *e2eFarm) startServer(extra ...string) (*proc, map[string]any) {
	f.t.Helper()
	p, ready := startProc(f.t, "server", append([]string{"server", "--data-dir", filepath.Join(f.dir, "server"),
		"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--raft-listen", "127.0.0.1:0", "--agent-listen", "127.0.0.1:0",
		"--admin-token", e2eAdminToken, "--agent-token", e2eAgentToken, "--rate-limits=false", "--allow-private-urls", "--dev-allow-private-webhooks",
		"--lease-duration", e2eLease.String(), "--heartbeat-interval", e2eHeartbeat.String(), "--log-level", "info",
		// Short retry backoffs: a runner that always fails exhausts its attempts in seconds.
		"--retry-backoff", "200ms"}, extra...),
		nil, "control plane ready")
	pub, _ := ready["public"].(string)
	adm, _ := ready["admin"].(string)
	agt, _ := ready["agent"].(string)
	if pub == "" || adm == "" || agt == "" {
		f.t.Fatalf("ready line without the public, admin and agent addresses: %v", ready)
	}
	p.public = "http://" + pub
	p.admin = &admin.Client{Server: "http://" + adm, Token: e2eAdminToken}
	f.agentURL = "http://" + agt
	return p, ready
}

// e2eAgent is one running `vidfarm agent`.
type e2eAgent struct {
	*proc
	name   string
	nodeID string
}

// runnersFile writes a runners file (version 1, the lines given after
// "runners:") in the farm's directory and returns its path.
func (f *e2eFarm) runnersFile(runners string, args ...any) string {
	f.t.Helper()
	path := filepath.Join(f.dir, "runners.yaml")
	if err := os.WriteFile(path, fmt.Appendf(nil, "version: 1\nrunners:\n"+runners, args...), 0o644); err != nil {
		f.t.Fatal(err)
	}
	return path
}

// startAgent runs an agent with 4 virtual GPUs that trusts the image server;
// extra are more flags (--runner MODEL=COMMAND).
func (f *e2eFarm) startAgent(name string, extra ...string) *e2eAgent {
	f.t.Helper()
	return f.startAgentEnv(name, nil, extra...)
}

// startAgentEnv is startAgent with more environment for the agent (a later
// value of a variable wins).
func (f *e2eFarm) startAgentEnv(name string, env []string, extra ...string) *e2eAgent {
	f.t.Helper()
	args := append([]string{"agent", "--server", f.agentURL, "--token", e2eAgentToken, "--name", name,
		"--virtual-gpus", "4", "--allow-private-inputs", "--work-dir", filepath.Join(f.dir, "work-"+name),
		"--drain-timeout", "1s", "--log-level", "info"}, extra...)
	// Go reads SSL_CERT_FILE on Linux: the agent's input fetcher, which uses
	// the system roots, trusts the test's image server.
	p, _ := startProc(f.t, "agent "+name, args, append([]string{"SSL_CERT_FILE=" + f.certFile}, env...), "agent running")
	a := &e2eAgent{proc: p, name: name}
	reg := findLogs(p, "registered")
	if len(reg) == 0 {
		f.t.Fatalf("agent %s is running but logged no registration:\n%s", name, p.stderr)
	}
	a.nodeID, _ = reg[0]["node_id"].(string)
	if a.nodeID == "" {
		f.t.Fatalf("agent %s: registration without a node id: %v", name, reg[0])
	}
	return a
}

// faceColour fills /img/face.png.
var faceColour = color.RGBA{255, 0, 255, 255}

// startImages serves PNGs the test draws over HTTPS on 127.0.0.1: /img/<n>.png,
// each a gradient of its own colour, and /img/face.png.
func (f *e2eFarm) startImages() {
	f.t.Helper()
	pngs := map[string][]byte{}
	colors := []color.RGBA{{220, 40, 40, 255}, {40, 180, 60, 255}, {40, 80, 220, 255}, {230, 200, 30, 255}}
	for i, c := range colors {
		img := image.NewRGBA(image.Rect(0, 0, 320, 180))
		for y := range 180 {
			for x := range 320 {
				k := uint8(x * 255 / 319)
				img.SetRGBA(x, y, color.RGBA{c.R/2 + k/2, c.G/2 + uint8(y*127/179), c.B/2 + (255-k)/2, 255})
			}
		}
		var buf bytes.Buffer
		if err := png.Encode(&buf, img); err != nil {
			f.t.Fatal(err)
		}
		pngs[fmt.Sprintf("/img/%d.png", i)] = buf.Bytes()
	}
	// /img/face.png: a portrait photo of one vivid colour, for avatar tests.
	face := image.NewRGBA(image.Rect(0, 0, 240, 320))
	for y := range 320 {
		for x := range 240 {
			face.SetRGBA(x, y, faceColour)
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, face); err != nil {
		f.t.Fatal(err)
	}
	pngs["/img/face.png"] = buf.Bytes()
	f.images = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := pngs[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		f.hitsMu.Lock()
		f.hits[r.URL.Path]++
		f.hitsMu.Unlock()
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(b)
	}))
	f.images.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	f.images.StartTLS()
	f.t.Cleanup(f.images.Close)
	f.certFile = filepath.Join(f.dir, "images-cert.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: f.images.Certificate().Raw})
	if err := os.WriteFile(f.certFile, pemBytes, 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// imageURL is the address of test image n.
func (f *e2eFarm) imageURL(n int) string { return fmt.Sprintf("%s/img/%d.png", f.images.URL, n) }

// imageHits is how often image n was downloaded.
func (f *e2eFarm) imageHits(n int) int {
	f.hitsMu.Lock()
	defer f.hitsMu.Unlock()
	return f.hits[fmt.Sprintf("/img/%d.png", n)]
}

// createVideo posts body and returns the 201 video object.
func (f *e2eFarm) createVideo(body string) map[string]any {
	f.t.Helper()
	return f.srv.must(http.StatusCreated, http.MethodPost, "/v1/videos", f.apiKey, body).obj(f.t)
}

// video reads a video.
func (f *e2eFarm) video(id string) map[string]any {
	f.t.Helper()
	return f.srv.must(http.StatusOK, http.MethodGet, "/v1/videos/"+id, f.apiKey, "").obj(f.t)
}

// waitVideo polls the video until cond holds; a video that ends (completed
// or failed) without cond holding fails the test at once.
func (f *e2eFarm) waitVideo(id string, timeout time.Duration, what string, cond func(v map[string]any) bool) map[string]any {
	f.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		v := f.video(id)
		if cond(v) {
			return v
		}
		if s := v["status"]; s == "failed" || s == "completed" {
			f.t.Fatalf("video %s ended %s while waiting until %s: %v", id, s, what, v)
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("video %s: not %s after %v: %v", id, what, timeout, v)
		}
		time.Sleep(e2ePoll) // polling interval, not a wait for an event
	}
}

// waitStatus waits until the video's status is status.
func (f *e2eFarm) waitStatus(id, status string, timeout time.Duration) map[string]any {
	f.t.Helper()
	return f.waitVideo(id, timeout, status, func(v map[string]any) bool { return v["status"] == status })
}

// balance is the account's credits as GET /v1/me shows them, checked
// against the admin API.
func (f *e2eFarm) balance() int64 {
	f.t.Helper()
	me := f.srv.must(http.StatusOK, http.MethodGet, "/v1/me", f.apiKey, "").obj(f.t)
	got := int64(me["credits"].(float64))
	a, err := f.srv.admin.Account(context.Background(), f.accountID)
	if err != nil {
		f.t.Fatalf("admin account: %v", err)
	}
	if a.Credits != got {
		f.t.Fatalf("GET /v1/me says %d credits, the admin API %d", got, a.Credits)
	}
	return got
}

// download GETs a signed file URL into the test's directory.
func (f *e2eFarm) download(rawURL, name string) string {
	f.t.Helper()
	if rawURL == "" {
		f.t.Fatalf("no URL for %s", name)
	}
	resp, err := http.Get(rawURL)
	if err != nil {
		f.t.Fatalf("GET %s: %v", name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		f.t.Fatalf("GET %s (%s): %d %s", name, rawURL, resp.StatusCode, b)
	}
	path := filepath.Join(f.dir, "downloads", name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		f.t.Fatal(err)
	}
	out, err := os.Create(path)
	if err != nil {
		f.t.Fatal(err)
	}
	defer out.Close()
	if _, err := io.Copy(out, resp.Body); err != nil {
		f.t.Fatalf("GET %s: %v", name, err)
	}
	return path
}

// checkMP4 probes a delivered video: H.264 at width x height, within 0.5 s of
// seconds long, with an audio stream when audio is set. It returns the probe.
func checkMP4(t *testing.T, path string, seconds float64, width, height int, audio bool) pipeline.MediaInfo {
	t.Helper()
	info, err := pipeline.Probe(context.Background(), path)
	if err != nil {
		t.Fatalf("probe %s: %v", filepath.Base(path), err)
	}
	name := filepath.Base(path)
	if d := info.Duration.Seconds(); d < seconds-0.5 || d > seconds+0.5 {
		t.Errorf("%s lasts %.3f s, want %v ± 0.5 s", name, d, seconds)
	}
	if info.Width != width || info.Height != height {
		t.Errorf("%s is %dx%d, want %dx%d", name, info.Width, info.Height, width, height)
	}
	if info.VideoCodec != "h264" || info.PixFmt != "yuv420p" {
		t.Errorf("%s: video %s/%s, want h264/yuv420p", name, info.VideoCodec, info.PixFmt)
	}
	if audio && !info.HasAudio {
		t.Errorf("%s has no audio stream", name)
	}
	return info
}

// frameSize is pipeline.FrameSize, failing the test on error.
func frameSize(t *testing.T, resolution, aspect string) (int, int) {
	t.Helper()
	w, h, err := pipeline.FrameSize(resolution, aspect)
	if err != nil {
		t.Fatal(err)
	}
	return w, h
}

// checkCaptions parses an SRT or WebVTT file with go-astisub and checks it
// has cues, each with text, in order, inside [0, length].
func checkCaptions(t *testing.T, path string, length time.Duration) *astisub.Subtitles {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var subs *astisub.Subtitles
	name := filepath.Base(path)
	switch filepath.Ext(path) {
	case ".srt":
		subs, err = astisub.ReadFromSRT(fh)
	case ".vtt":
		subs, err = astisub.ReadFromWebVTT(fh)
	default:
		t.Fatalf("%s: not a caption file name", name)
	}
	if err != nil {
		t.Fatalf("parse %s: %v", name, err)
	}
	if len(subs.Items) == 0 {
		t.Fatalf("%s has no cues", name)
	}
	var prevEnd time.Duration
	for i, it := range subs.Items {
		if it.StartAt < prevEnd || it.EndAt <= it.StartAt || it.EndAt > length {
			t.Errorf("%s cue %d: %v → %v (previous ended %v); want ordered cues inside the video's %v",
				name, i+1, it.StartAt, it.EndAt, prevEnd, length)
		}
		if strings.TrimSpace(it.String()) == "" {
			t.Errorf("%s cue %d has no text", name, i+1)
		}
		prevEnd = it.EndAt
	}
	return subs
}

// writeScript writes an executable sh script into dir.
func writeScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// gatedRunnerScript is an external runner (protocol vidfarm.render.v1) that
// reports progress, touches started, then waits for the file gate; once it is
// there, it works for work half-seconds (reporting progress), renders the
// asked 854x480 clip of 5 s with a tone (the agent checks a runner's clip
// against the request; the procedural runner makes no sound without
// generate_audio, so the tone says whose clip a video is) and touches done. It exits when the agent that started it
// dies, so a SIGKILLed agent leaves no runner behind.
func gatedRunnerScript(started, gate, done string, work int) string {
	return fmt.Sprintf(`#!/bin/sh
set -eu
req=$(cat)
out=$(printf '%%s' "$req" | sed -n 's/.*"output_path":"\([^"]*\)".*/\1/p')
agent=$PPID
alive() { kill -0 "$agent" 2>/dev/null || { echo "e2e runner: agent $agent is gone" >&2; exit 3; }; }
echo "progress 20"
touch %[1]q
while [ ! -e %[2]q ]; do
  alive
  sleep 0.1
done
i=0
while [ "$i" -lt %[4]d ]; do
  alive
  i=$((i+1))
  echo "progress $((20 + i))"
  sleep 0.5
done
ffmpeg -v error -nostdin -y -f lavfi -i "testsrc2=s=854x480:r=24:d=5" -f lavfi -i "sine=frequency=440:duration=5" \
  -c:v libx264 -preset ultrafast -pix_fmt yuv420p -c:a aac -shortest "$out" >&2
echo "progress 100"
touch %[3]q
`, started, gate, done, work)
}

// touch creates an empty file.
func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// exists reports whether path exists.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// num reads a JSON number field of a decoded object.
func num(m map[string]any, key string) float64 {
	f, _ := m[key].(float64)
	return f
}

// percentOf is progress.percent of a video object (0 without progress).
func percentOf(v map[string]any) float64 {
	p, _ := v["progress"].(map[string]any)
	return num(p, "percent")
}

// gatedRender is a manual video whose render runs on agent A in a gated
// runner (see gatedRunnerScript) that has started and waits for its gate.
type gatedRender struct {
	agent      *e2eAgent
	id         string
	gate, done string
}

// startGatedRender starts agent A with the gated runner (work: half-seconds
// of work once the gate opens), creates a video and waits until A's runner
// has started rendering it with progress reported.
func (f *e2eFarm) startGatedRender(prompt string, work int) gatedRender {
	f.t.Helper()
	started, gate, done := filepath.Join(f.dir, "started"), filepath.Join(f.dir, "gate"), filepath.Join(f.dir, "done")
	slow := writeScript(f.t, f.dir, "slow-runner.sh", gatedRunnerScript(started, gate, done, work))
	a := f.startAgent("agent-a", "--runner", e2eModel+"="+slow)
	id := f.createVideo(manualBody(prompt, ""))["id"].(string)
	f.waitVideo(id, 30*time.Second, "processing on agent A with progress", func(v map[string]any) bool {
		return v["status"] == "processing" && percentOf(v) > 0
	})
	eventually(f.t, 10*time.Second, "agent A's runner started", func() bool { return exists(started) })
	return gatedRender{agent: a, id: id, gate: gate, done: done}
}
