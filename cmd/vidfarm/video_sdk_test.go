package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/client"
	"github.com/vidfarm/vidfarm/controlplane/admin"
)

// devFarm is a running `vidfarm dev` (control plane and its local agent) and a
// Pro account's key.
type devFarm struct {
	public string
	apiKey string
	admin  *admin.Client
}

func startDevFarm(t *testing.T, credits int64, extra ...string) *devFarm {
	t.Helper()
	requireE2E(t)
	const token = "sdk-admin-token"
	_, ready := startProc(t, "dev", append([]string{"dev", "--data-dir", filepath.Join(t.TempDir(), "dev"),
		"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--raft-listen", "127.0.0.1:0", "--agent-listen", "127.0.0.1:0",
		"--admin-token", token, "--rate-limits=false", "--log-level", "info"}, extra...), nil, "control plane ready")
	pub, _ := ready["public"].(string)
	adm, _ := ready["admin"].(string)
	if pub == "" || adm == "" {
		t.Fatalf("ready line without the public and admin addresses: %v", ready)
	}
	f := &devFarm{public: "http://" + pub, admin: &admin.Client{Server: "http://" + adm, Token: token}}
	a, err := f.admin.CreateAccount(context.Background(), "sdk", "pro", credits)
	if err != nil {
		t.Fatalf("create account: %v", err)
	}
	f.apiKey = a.APIKey
	return f
}

// dropProxy forwards to the API and, for the first `drops` creates, loses the
// answer after the server has handled the request: the client sees the
// connection close, the video exists.
type dropProxy struct {
	mu    sync.Mutex
	drops int
	keys  []string // Idempotency-Key of every POST /v1/videos
}

func (d *dropProxy) handler(t *testing.T, target string) http.Handler {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != "POST" || r.URL.Path != "/v1/videos" {
			rp.ServeHTTP(w, r)
			return
		}
		d.mu.Lock()
		d.keys = append(d.keys, r.Header.Get("Idempotency-Key"))
		drop := d.drops > 0
		d.drops--
		d.mu.Unlock()
		if !drop {
			rp.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		rp.ServeHTTP(rec, r)
		if rec.Code != http.StatusCreated {
			t.Errorf("create through the proxy: %d %s", rec.Code, rec.Body)
		}
		c, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		c.Close()
	})
}

// TestSDKAgainstDev runs the SDK against a real `vidfarm dev`: a create whose
// answers are lost twice is one video and one charge; Wait follows it to its
// end; cancel refunds a queued video and refuses a completed one.
func TestSDKAgainstDev(t *testing.T) {
	f := startDevFarm(t, 500)
	proxy := &dropProxy{drops: 2}
	ps := httptest.NewServer(proxy.handler(t, f.public))
	t.Cleanup(ps.Close)
	c, err := client.New(ps.URL, f.apiKey, client.WithBackoff(10*time.Millisecond, 100*time.Millisecond),
		client.WithPollInterval(e2ePoll))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	v, err := c.CreateManual(ctx, client.ManualVideoRequest{Prompt: "a fox in the snow", Model: e2eModel,
		Resolution: e2eResolution, AspectRatio: e2eAspect, DurationSeconds: 5})
	if err != nil {
		t.Fatalf("create through a proxy that drops two answers: %v", err)
	}
	if len(proxy.keys) != 3 || proxy.keys[0] == "" || proxy.keys[1] != proxy.keys[0] || proxy.keys[2] != proxy.keys[0] {
		t.Errorf("creates sent with keys %q, want three attempts with one key", proxy.keys)
	}
	if !v.Replayed {
		t.Error("the third attempt's answer is the server's replay of the first: Replayed is false")
	}
	list, err := c.ListVideos(ctx, client.ListVideosParams{})
	if err != nil {
		t.Fatal(err)
	}
	if list.Total != 1 || list.Data[0].ID != v.ID {
		t.Fatalf("after a create retried twice the account has %d videos (%+v), want only %s", list.Total, list.Data, v.ID)
	}
	me, err := c.Me(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if me.Credits != 500-v.CreditsCharged || v.CreditsCharged == 0 {
		t.Errorf("balance %d after a %d-credit video, want %d: charged once", me.Credits, v.CreditsCharged, 500-v.CreditsCharged)
	}

	var seen []string
	final, err := c.Wait(ctx, v.ID, func(v client.Video) { seen = append(seen, v.Status) })
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	if final.Status != client.StatusCompleted || final.VideoURL == "" {
		t.Fatalf("video ended %s (%+v), want completed with a URL", final.Status, final.Error)
	}
	if len(seen) == 0 || seen[len(seen)-1] != client.StatusCompleted {
		t.Errorf("callback saw %v, want it to end with completed", seen)
	}
	if _, err := c.CancelVideo(ctx, v.ID); !client.IsCode(err, client.CodeVideoNotCancelable) {
		t.Errorf("cancel a completed video: %v, want video_not_cancelable", err)
	}

	// A long auto video, canceled while it waits or renders.
	long, err := c.CreateAuto(ctx, client.AutoVideoRequest{Prompt: "A tour of a lighthouse", DurationSeconds: 120})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.CancelVideo(ctx, long.ID)
	if err != nil {
		t.Fatalf("cancel: %v", err)
	}
	if got.Status != client.StatusCanceled || got.Cancellation == nil {
		t.Fatalf("canceled video %+v, want status canceled with a cancellation", got)
	}
	after, err := c.Me(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := me.Credits - long.CreditsCharged + got.Cancellation.CreditsRefunded; after.Credits != want {
		t.Errorf("balance %d after cancel, want %d (%d charged, %d refunded)", after.Credits, want, long.CreditsCharged, got.Cancellation.CreditsRefunded)
	}
}

// TestVideoCLIAgainstDev runs `vidfarm video` against a real `vidfarm dev`.
func TestVideoCLIAgainstDev(t *testing.T) {
	f := startDevFarm(t, 500)
	env := []string{"VIDFARM_URL=" + f.public, "VIDFARM_API_KEY=" + f.apiKey}
	var stderr string // the last run's
	run := func(args ...string) (string, error) {
		t.Helper()
		cmd := exec.Command(vidfarmBinary(t), append([]string{"video", "--poll-interval", e2ePoll.String()}, args...)...)
		cmd.Env = env
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		stderr = errb.String()
		if err != nil {
			t.Logf("vidfarm video %s: %v\nstderr: %s", strings.Join(args, " "), err, errb.String())
		}
		return out.String(), err
	}
	out, err := run("create", "--mode", "manual", "--model", e2eModel, "--resolution", e2eResolution,
		"--duration", "5", "--prompt", "a fox in the snow", "--wait")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], " completed ") || !strings.HasPrefix(lines[1], f.public+"/files/") {
		t.Fatalf("create --wait printed %q, want the completed video and its URL", out)
	}
	id, _, _ := strings.Cut(lines[0], " ")

	out, err = run("create", "--prompt", "A tour of a lighthouse", "--duration", "120", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var long client.Video
	if err := json.Unmarshal([]byte(out), &long); err != nil || long.Status != client.StatusQueued {
		t.Fatalf("create --json printed %q (%v), want a queued video", out, err)
	}
	out, err = run("cancel", long.ID, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var canceled client.Video
	if err := json.Unmarshal([]byte(out), &canceled); err != nil || canceled.Status != client.StatusCanceled || canceled.Cancellation == nil {
		t.Fatalf("cancel --json printed %q (%v), want a canceled video", out, err)
	}
	if _, err := run("cancel", id); err == nil {
		t.Error("cancel of a completed video exited 0")
	}

	out, err = run("--json", "list")
	if err != nil {
		t.Fatal(err)
	}
	var list client.List[client.Video]
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("list --json printed %q: %v", out, err)
	}
	if list.Total != 2 || list.Data[0].ID != long.ID || list.Data[1].ID != id {
		t.Errorf("list: %d videos %+v, want %s then %s", list.Total, list.Data, long.ID, id)
	}
	out, err = run("watch", id)
	if err != nil || !strings.Contains(out, f.public+"/files/") {
		t.Errorf("watch of a completed video printed %q (%v), want its URL", out, err)
	}
	if _, err := run("watch", long.ID); err == nil {
		t.Error("watch of a canceled video exited 0")
	}
	out, err = run("get", id)
	if err != nil || !strings.Contains(out, id+"  completed") {
		t.Errorf("get printed %q (%v), want the completed video", out, err)
	}

	// A create repeated with its Idempotency-Key says it made nothing new.
	keyed := func() string {
		t.Helper()
		out, err := run("create", "--prompt", "A tour of a lighthouse", "--duration", "120", "--idempotency-key", "tour-1")
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	first := keyed()
	if strings.Contains(stderr, "earlier") {
		t.Errorf("a first create with a key said %q", stderr)
	}
	if again := keyed(); again != first || !strings.Contains(stderr, "made earlier with Idempotency-Key tour-1") {
		t.Errorf("the repeated create printed %q after %q, and said %q; want the same video and that it was made earlier", again, first, stderr)
	}
}

// `vidfarm video watch` outlives its server's restart: the farm stops with
// the video still queued (no agent), the watch says it reads the video
// again, and when the farm is back with its agent the video completes and
// the watch ends with its URL, exit 0. It gave up after about 3 s before.
func TestVideoWatchOutlivesARestart(t *testing.T) {
	requireE2E(t)
	const token = "watch-admin-token"
	dir := filepath.Join(t.TempDir(), "dev")
	args := func(listen string, extra ...string) []string {
		return append([]string{"dev", "--data-dir", dir, "--listen", listen, "--admin-listen", "127.0.0.1:0",
			"--raft-listen", "127.0.0.1:0", "--agent-listen", "127.0.0.1:0", "--admin-token", token,
			"--rate-limits=false", "--log-level", "info"}, extra...)
	}
	first, ready := startProc(t, "dev", args("127.0.0.1:0", "--no-agent"), nil, "control plane ready")
	pub, _ := ready["public"].(string)
	adm, _ := ready["admin"].(string)
	a, err := (&admin.Client{Server: "http://" + adm, Token: token}).CreateAccount(context.Background(), "watch", "pro", 500)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New("http://"+pub, a.APIKey)
	if err != nil {
		t.Fatal(err)
	}
	v, err := c.CreateManual(context.Background(), client.ManualVideoRequest{Prompt: "a fox in the snow", Model: e2eModel,
		Resolution: e2eResolution, DurationSeconds: 5})
	if err != nil {
		t.Fatal(err)
	}
	watch := exec.Command(vidfarmBinary(t), "video", "--poll-interval", "200ms", "watch", v.ID)
	watch.Env = []string{"VIDFARM_URL=http://" + pub, "VIDFARM_API_KEY=" + a.APIKey}
	var out bytes.Buffer
	errb := &lockedBuffer{}
	watch.Stdout, watch.Stderr = &out, errb
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- watch.Wait() }()
	t.Cleanup(func() { _ = watch.Process.Kill() })
	eventually(t, 30*time.Second, "the watch shows the queued video", func() bool { return strings.Contains(errb.String(), "queued") })

	first.terminate()
	eventually(t, 30*time.Second, "the watch says it reads again", func() bool {
		return strings.Contains(errb.String(), "reading the video again in")
	})
	select {
	case err := <-done:
		t.Fatalf("the watch ended while the farm was down (%v):\n%s", err, errb)
	default:
	}
	startProc(t, "dev", args(pub), nil, "control plane ready")
	select {
	case err := <-done:
		if err != nil || !strings.Contains(out.String(), "/files/") {
			t.Fatalf("watch after the restart: %v, printed %q\n%s", err, out.String(), errb)
		}
	case <-time.After(90 * time.Second):
		t.Fatalf("the watch did not end after the restart:\n%s", errb)
	}
}
