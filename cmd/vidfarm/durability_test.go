package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/admin"
)

// The durability test runs the real binary: it is built once, into a temp dir.
var (
	binOnce sync.Once
	binPath string
	binErr  error
)

func vidfarmBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "vidfarm-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "vidfarm")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

const durabilityToken = "durability-admin-token"

// proc is one running `vidfarm server`.
type proc struct {
	t      *testing.T
	cmd    *exec.Cmd
	public string // base URL
	admin  *admin.Client
	stderr *lockedBuffer
	exited chan error
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startServer runs the binary on dataDir with every listener on a free loopback
// port, and learns the addresses from its "control plane ready" log line.
func startServer(t *testing.T, dataDir string) *proc {
	t.Helper()
	return startServerBin(t, vidfarmBinary(t), dataDir)
}

// startServerBin is startServer with another binary (an earlier release).
func startServerBin(t *testing.T, bin, dataDir string) *proc {
	t.Helper()
	p, m := startProcBin(t, bin, "server", []string{"server", "--data-dir", dataDir,
		"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--raft-listen", "127.0.0.1:0", "--agent-listen", "127.0.0.1:0",
		"--admin-token", durabilityToken, "--rate-limits=false", "--log-level", "info",
		// File URLs start with the public URL; a fixed one keeps replayed bodies
		// identical although the port changes with every start.
		"--public-url", "http://vidfarm.test"}, nil, "control plane ready")
	pub, _ := m["public"].(string)
	adm, _ := m["admin"].(string)
	if pub == "" || adm == "" {
		t.Fatalf("ready line without addresses: %v", m)
	}
	p.public = "http://" + pub
	p.admin = &admin.Client{Server: "http://" + adm, Token: durabilityToken}
	return p
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *proc) kill() {
	p.t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		p.t.Fatal(err)
	}
	select {
	case <-p.exited:
	case <-time.After(20 * time.Second):
		p.t.Fatal("process did not die on SIGKILL")
	}
}

// terminate sends SIGTERM and expects a clean exit.
func (p *proc) terminate() {
	p.t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		p.t.Fatal(err)
	}
	select {
	case err := <-p.exited:
		if err != nil {
			p.t.Fatalf("graceful shutdown exited with %v:\n%s", err, p.stderr)
		}
	case <-time.After(40 * time.Second):
		p.t.Fatal("process did not stop on SIGTERM")
	}
}

type reply struct {
	status int
	body   []byte
}

func (r reply) obj(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("not a JSON object (%v): %s", err, r.body)
	}
	return m
}

func (p *proc) call(method, path, key, body string, headers ...string) reply {
	p.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, p.public+path, rd)
	if err != nil {
		p.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		p.t.Fatal(err)
	}
	return reply{resp.StatusCode, raw}
}

func (p *proc) must(status int, method, path, key, body string, headers ...string) reply {
	p.t.Helper()
	r := p.call(method, path, key, body, headers...)
	if r.status != status {
		p.t.Fatalf("%s %s: %d, want %d: %s", method, path, r.status, status, r.body)
	}
	return r
}

// idemCreate is a POST /v1/videos with an Idempotency-Key whose first answer is
// kept, to be replayed byte for byte later.
type idemCreate struct {
	key, idem, body string
	first           []byte
	id              string
}

// farm is everything the test created and what it should read back.
type farm struct {
	keys     map[string]string    // name -> secret
	accounts map[string][2]string // name -> account id and a key that stays valid
	videos   map[string]string    // id -> key that may read it
	creates  []*idemCreate
}

func (f *farm) create(t *testing.T, p *proc, key, idem, body string) string {
	t.Helper()
	r := p.must(http.StatusCreated, http.MethodPost, "/v1/videos", key, body, "Idempotency-Key", idem)
	id := r.obj(t)["id"].(string)
	f.creates = append(f.creates, &idemCreate{key: key, idem: idem, body: body, first: r.body, id: id})
	f.videos[id] = key
	return id
}

// observed is the state the API shows, in a form that does not depend on the
// hour the test runs in (signed preview URLs in reads carry a read-time expiry).
type observed struct {
	Me      map[string]map[string]any
	Admin   map[string]admin.AccountJSON
	Keys    map[string]string // name -> "ok" or the 401 error code
	Videos  map[string]map[string]any
	Folders map[string]string // account -> raw GET /v1/folders
	Lists   map[string][]string
}

func observe(t *testing.T, p *proc, f *farm) observed {
	t.Helper()
	ctx := context.Background()
	o := observed{Me: map[string]map[string]any{}, Admin: map[string]admin.AccountJSON{}, Keys: map[string]string{},
		Videos: map[string]map[string]any{}, Folders: map[string]string{}, Lists: map[string][]string{}}
	for name, a := range f.accounts {
		o.Me[name] = p.must(http.StatusOK, http.MethodGet, "/v1/me", a[1], "").obj(t)
		acct, err := p.admin.Account(ctx, a[0])
		if err != nil {
			t.Fatalf("admin account %s: %v", name, err)
		}
		o.Admin[name] = acct
		o.Folders[name] = string(p.must(http.StatusOK, http.MethodGet, "/v1/folders", a[1], "").body)
		var list struct {
			Data []map[string]any `json:"data"`
		}
		if err := json.Unmarshal(p.must(http.StatusOK, http.MethodGet, "/v1/videos?limit=100", a[1], "").body, &list); err != nil {
			t.Fatal(err)
		}
		for _, v := range list.Data {
			o.Lists[name] = append(o.Lists[name], fmt.Sprintf("%s/%s/%v/%v", v["id"], v["status"], v["credits_charged"], v["folder_id"]))
		}
	}
	for name, secret := range f.keys {
		r := p.call(http.MethodGet, "/v1/me", secret, "")
		switch r.status {
		case http.StatusOK:
			o.Keys[name] = "ok"
		case http.StatusUnauthorized:
			o.Keys[name] = r.obj(t)["error"].(map[string]any)["code"].(string)
		default:
			t.Fatalf("key %s: %d %s", name, r.status, r.body)
		}
	}
	for id, key := range f.videos {
		v := p.must(http.StatusOK, http.MethodGet, "/v1/videos/"+id, key, "").obj(t)
		if pv, ok := v["preview"].(map[string]any); ok {
			delete(pv, "image_url") // its expiry is the read's hour
		}
		dropEstimate(v)
		o.Videos[id] = v
	}
	return o
}

// dropEstimate removes a queued video's wait estimate: it reads the
// completions the node has seen since it started, not the state (and older
// releases have none).
func dropEstimate(v map[string]any) {
	if pr, ok := v["progress"].(map[string]any); ok {
		delete(pr, "eta_seconds")
	}
}

// withoutEstimates is a GET /v1/videos answer without its wait estimates,
// re-encoded.
func withoutEstimates(t *testing.T, body []byte) string {
	t.Helper()
	var list map[string]any
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatalf("list answer %s: %v", body, err)
	}
	data, _ := list["data"].([]any)
	for _, v := range data {
		if m, ok := v.(map[string]any); ok {
			dropEstimate(m)
		}
	}
	out, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func sameObserved(t *testing.T, got, want observed) {
	t.Helper()
	g, _ := json.MarshalIndent(got, "", " ")
	w, _ := json.MarshalIndent(want, "", " ")
	if !bytes.Equal(g, w) {
		t.Fatalf("state after restart differs\n got: %s\nwant: %s", g, w)
	}
}

// replays checks every idempotency record replays its first answer byte for byte.
func replays(t *testing.T, p *proc, f *farm) {
	t.Helper()
	for _, c := range f.creates {
		r := p.must(http.StatusCreated, http.MethodPost, "/v1/videos", c.key, c.body, "Idempotency-Key", c.idem)
		if !bytes.Equal(r.body, c.first) {
			t.Fatalf("replay of %s differs\n got: %s\nwant: %s", c.idem, r.body, c.first)
		}
	}
}

func TestDurabilityAcrossKillAndRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	ctx := context.Background()
	dataDir := t.TempDir()
	p := startServer(t, dataDir)
	f := &farm{keys: map[string]string{}, accounts: map[string][2]string{}, videos: map[string]string{}}

	newAccount := func(name, plan string, credits int64) (string, string) {
		a, err := p.admin.CreateAccount(ctx, name, plan, credits)
		if err != nil {
			t.Fatalf("create account %s: %v", name, err)
		}
		f.accounts[name] = [2]string{a.AccountID, a.APIKey}
		f.keys[name+"/first"] = a.APIKey
		return a.AccountID, a.APIKey
	}
	newKey := func(name, acct string) (string, string) {
		k, err := p.admin.CreateKey(ctx, acct)
		if err != nil {
			t.Fatal(err)
		}
		f.keys[name] = k.APIKey
		return k.KeyID, k.APIKey
	}
	folder := func(key, name string) string {
		return p.must(http.StatusCreated, http.MethodPost, "/v1/folders", key, fmt.Sprintf(`{"name":%q}`, name)).obj(t)["id"].(string)
	}

	// Before the snapshot.
	proID, proKey := newAccount("pro", "pro", 100)
	maxID, maxKey := newAccount("max", "max", 50)
	freeID, freeKey := newAccount("free", "free", 0)
	revokedID, _ := newKey("pro/second", proID)
	if _, err := p.admin.RevokeKey(ctx, revokedID); err != nil {
		t.Fatal(err)
	}
	newKey("pro/third", proID)
	campaign := folder(proKey, "Campaign")
	v1 := f.create(t, p, proKey, "pro-1", fmt.Sprintf(`{"mode":"auto","prompt":"spring launch","duration_seconds":20,"folder_id":%q,"name":"launch"}`, campaign))
	f.create(t, p, proKey, "pro-2", `{"mode":"manual","prompt":"a fox in snow","model":"wan-2.2-a14b","resolution":"480p"}`)
	v3 := p.must(http.StatusCreated, http.MethodPost, "/v1/videos", proKey, `{"mode":"auto","prompt":"doomed","duration_seconds":10}`).obj(t)["id"].(string)
	f.videos[v3] = proKey
	if _, err := p.admin.FailVideo(ctx, v3, "gpu node lost"); err != nil {
		t.Fatal(err)
	}
	preview := f.create(t, p, freeKey, "free-1", `{"mode":"auto","prompt":"my free video","duration_seconds":30}`)
	if _, err := p.admin.GrantCredits(ctx, maxID, 25); err != nil {
		t.Fatal(err)
	}

	snap, err := p.admin.Snapshot(ctx)
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	if !strings.Contains(string(snap), `"taken"`) {
		t.Fatalf("snapshot answer %s", snap)
	}
	if snaps, _ := filepath.Glob(filepath.Join(dataDir, "raft", "snapshots", "*", "state.bin")); len(snaps) != 1 {
		t.Fatalf("snapshot files %v, want one", snaps)
	}

	// After the snapshot: these live only in the log.
	later := folder(proKey, "Later")
	folder(maxKey, "Max's folder")
	f.create(t, p, proKey, "pro-4", fmt.Sprintf(`{"mode":"auto","prompt":"after the snapshot","duration_seconds":5,"folder_id":%q}`, later))
	if _, err := p.admin.FailVideo(ctx, v1, "operator cancelled"); err != nil {
		t.Fatal(err)
	}
	f.create(t, p, maxKey, "max-1", `{"mode":"auto","prompt":"max video","duration_seconds":60}`)
	lateID, _ := newKey("max/late", maxID)
	if _, err := p.admin.RevokeKey(ctx, lateID); err != nil {
		t.Fatal(err)
	}
	if _, err := p.admin.SetPlan(ctx, freeID, "pro"); err != nil {
		t.Fatal(err)
	}
	p.must(http.StatusOK, http.MethodPost, "/v1/videos/"+preview+"/render", freeKey, "")
	if _, err := p.admin.GrantCredits(ctx, proID, 7); err != nil {
		t.Fatal(err)
	}

	before := observe(t, p, f)
	// Spot checks that the scenario did what it says, so the comparison means something.
	if before.Keys["pro/second"] != "api_key_revoked" || before.Keys["max/late"] != "api_key_revoked" || before.Keys["pro/third"] != "ok" {
		t.Fatalf("keys %v", before.Keys)
	}
	if before.Videos[v1]["status"] != "failed" || before.Videos[v3]["status"] != "failed" || before.Videos[preview]["status"] != "queued" {
		t.Fatalf("videos %v", before.Videos)
	}
	// pro: 100 - 12 (v1, refunded) - manual - 6 (v3, refunded) - 3 (pro-4) + 7.
	manual := int64(before.Videos[f.creates[1].id]["credits_charged"].(float64))
	if got := int64(before.Me["pro"]["credits"].(float64)); got != 100-manual-3+7 || manual <= 0 {
		t.Fatalf("pro balance %d (manual video charged %d)", got, manual)
	}
	if before.Admin["max"].Credits != 75-36 || before.Admin["free"].Plan != "pro" || !before.Admin["free"].FreeVideoUsed {
		t.Fatalf("accounts %+v", before.Admin)
	}
	replays(t, p, f)

	p.kill()
	p = startServer(t, dataDir)
	sameObserved(t, observe(t, p, f), before)
	replays(t, p, f)
	// It came back from its state file (the video failed before the
	// snapshot is on disk there), replaying only the log after it.
	if !strings.Contains(p.stderr.String(), "resuming from state file") {
		t.Fatalf("restart did not resume from the state file:\n%s", p.stderr.String())
	}
	if m := stateMetric(t, p, `vidfarm_state_videos{tier="disk"}`); m < 1 {
		t.Fatalf("videos on disk after restart: %v", m)
	}

	// The restarted node takes writes, and charges from the recovered balance.
	p.must(http.StatusCreated, http.MethodPost, "/v1/videos", maxKey, `{"mode":"auto","prompt":"after restart","duration_seconds":5}`)
	if a, err := p.admin.Account(ctx, maxID); err != nil || a.Credits != 75-36-3 {
		t.Fatalf("max after a new video: %+v %v", a, err)
	}
	// A second snapshot and a graceful stop come back the same way.
	if _, err := p.admin.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	after := observe(t, p, f)
	p.terminate()
	p = startServer(t, dataDir)
	sameObserved(t, observe(t, p, f), after)
	replays(t, p, f)
	p.kill()
}

// stateMetric reads one sample from the admin listener's /metrics.
func stateMetric(t *testing.T, p *proc, series string) float64 {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, p.admin.Server+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+durabilityToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("metric %s: %v", line, err)
			}
			return n
		}
	}
	t.Fatalf("no %s in /metrics", series)
	return 0
}
