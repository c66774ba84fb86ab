package console_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/vidfarm/vidfarm/controlplane/admin"
	"github.com/vidfarm/vidfarm/models"
)

// chromium finds a headless-capable Chromium, or skips the test, unless
// VIDFARM_REQUIRE_TOOLS is set (make test): then a missing browser fails.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("VIDFARM_REQUIRE_TOOLS") != "" {
		t.Fatal("chromium is not installed and VIDFARM_REQUIRE_TOOLS is set: run scripts/deps.sh (Debian package chromium)")
	}
	t.Skip("chromium is not installed (Debian package chromium; set VIDFARM_REQUIRE_TOOLS to make this a failure)")
	return ""
}

// browser is one headless Chromium tab for a whole test.
type browser struct {
	t   *testing.T
	ctx context.Context
	dir string // screenshots
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium(t)), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 1000), chromedp.UserDataDir(t.TempDir()))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	// The first action starts the browser.
	must(t, chromedp.Do(ctx, chromedp.Navigate("about:blank")), "start chromium")
	dir := os.Getenv("VIDFARM_CONSOLE_SCREENSHOTS") // to look at them during development
	if dir == "" {
		dir = t.TempDir()
	}
	return &browser{t: t, ctx: ctx, dir: dir}
}

// stepTimeout bounds one step: the page polls every 1.5 s, so what the farm
// does shows within a few seconds.
const stepTimeout = 20 * time.Second

// do runs steps, failing the test with what was being done.
func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.shot("failed-" + strings.ReplaceAll(what, " ", "-"))
		b.t.Fatalf("%s: %v", what, err)
	}
}

// poll waits until the JavaScript expression is truthy and returns its value.
func poll[T any](b *browser, what, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Poll[T](expr, chromedp.WithPollingTimeout(stepTimeout), chromedp.WithPollingInterval(50*time.Millisecond)))
	if err != nil {
		b.shot("failed-" + strings.ReplaceAll(what, " ", "-"))
		b.t.Fatalf("%s: %v", what, err)
	}
	return v
}

func eval[T any](b *browser, expr string, opts ...chromedp.EvaluateOption) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, opts...))
	must(b.t, err, "evaluate %s", expr)
	return v
}

// shot saves a screenshot of the whole page.
func (b *browser) shot(name string) {
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return
	}
	p := filepath.Join(b.dir, name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
	}
}

// notReloaded checks that the page is the one loaded at login: what the test
// saw change, it saw change live.
func (b *browser) notReloaded() {
	b.t.Helper()
	if m := eval[string](b, `String(window.consoleTestMarker)`); m != "loaded once" {
		b.t.Fatalf("the page was reloaded (marker %q)", m)
	}
}

func (f *farm) nodeState(name string) string {
	f.t.Helper()
	nodes, err := f.admin.Nodes(context.Background())
	must(f.t, err, "list nodes")
	for _, n := range nodes {
		if n.Name == name {
			return n.State
		}
	}
	f.t.Fatalf("no node %s", name)
	return ""
}

// TestConsoleInBrowser drives the console in a headless Chromium through one
// farm's life: log in, a node registering, a video's wait reason changing
// when a node that runs its model comes, cordon and drain from the page
// while the node's task finishes, the video's task graph, logout. The page
// is never reloaded: everything shows through its polling.
func TestConsoleInBrowser(t *testing.T) {
	b := newBrowser(t)
	f := startFarm(t)
	key := f.account()
	all := models.IDs()
	model, others := all[0], all[1:]
	var vid, credA, credB string

	steps := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"login", func(t *testing.T) {
			b.do("open the console", chromedp.Navigate(f.consoleURL()), chromedp.WaitVisible(chromedp.CSS("#login")))
			b.shot("login")
			if d := eval[string](b, `getComputedStyle(document.getElementById('nav')).display`); d != "none" {
				t.Errorf("the pages' menu shows before login (display %s)", d)
			}
			b.do("log in with a wrong token", chromedp.SendKeys(chromedp.CSS("#token"), "not-the-token"), chromedp.Click(chromedp.CSS("#login button")))
			poll[bool](b, "the refusal shows", `document.getElementById('login-error').textContent.includes('wrong admin token')`)
			eval[string](b, `document.getElementById('token').value = ''`)
			b.do("log in", chromedp.SendKeys(chromedp.CSS("#token"), adminToken),
				chromedp.Click(chromedp.CSS("#login button")), chromedp.WaitVisible(chromedp.CSS("#nodes")))
			poll[bool](b, "the empty farm shows", `document.querySelector('#nodes tbody tr.empty') !== null`)
			eval[string](b, `window.consoleTestMarker = 'loaded once'`)
		}},
		{"a node that registers appears", func(t *testing.T) {
			credA = f.register("gpu-a", others)
			b.do("wait for gpu-a", chromedp.WaitVisible(chromedp.CSS(`#nodes tr[data-node="gpu-a"][data-state="active"]`)))
			if how := eval[string](b, `document.getElementById('updated').dataset.live`); how != "live" {
				t.Errorf("the farm page updates by %q, want live (server-sent events)", how)
			}
			row := eval[string](b, `document.querySelector('#nodes tr[data-node="gpu-a"]').textContent`)
			for _, want := range []string{"GPU-0: 80 GB", "□ idle", "● active", "4 free of 4", "warm: " + others[0]} {
				if !strings.Contains(row, want) {
					t.Errorf("gpu-a's row lacks %q: %s", want, row)
				}
			}
			f.telemetry(credA, gpuSample)
			gpu := poll[string](b, "GPU-0's readings show", `(document.querySelector('#nodes tr[data-node="gpu-a"] [data-gpu="GPU-0"] .telemetry') || {}).textContent`)
			for _, want := range []string{"30.5 of 80 GB used", "42% busy", "67 °C", "310 W"} {
				if !strings.Contains(gpu, want) {
					t.Errorf("GPU-0's readings lack %q: %s", want, gpu)
				}
			}
			b.shot("farm-telemetry")
			b.notReloaded()
		}},
		{"a queued video's reason changes when its node comes", func(t *testing.T) {
			vid = f.video(key, model)
			b.do("open the queue", chromedp.Click(chromedp.CSS(`a[data-page="queue"]`)))
			reasonOf := `(() => { const r = document.querySelector('#waiting tr[data-video="` + vid + `"] .reason strong'); return r ? r.textContent : '' })()`
			if r := poll[string](b, "the video waits", reasonOf); r != "no_node_supports_model" {
				t.Fatalf("reason %q with no node running %s", r, model)
			}
			if eval[int](b, `document.querySelectorAll('#overdue tbody tr.empty').length`) != 1 {
				t.Error("the queue page lacks its (empty) list of tasks past their class's p99")
			}
			b.shot("queue")
			credB = f.register("gpu-b", []string{model})
			after := poll[string](b, "the reason changes", `(() => { const r = `+reasonOf+`; return r !== 'no_node_supports_model' && (r || 'not waiting') })()`)
			t.Logf("with gpu-b registered the video's reason is %s", after)
			b.notReloaded()
		}},
		{"cordon and drain a node and watch its task finish", func(t *testing.T) {
			a := f.lease(credB)
			if a.Video.ID != vid {
				t.Fatalf("gpu-b leased %s of %s, want the render of %s", a.TaskID, a.Video.ID, vid)
			}
			f.heartbeat(credB, a, 40)
			b.do("open the farm", chromedp.Click(chromedp.CSS(`a[data-page="farm"]`)))
			running := `#nodes tr[data-node="gpu-b"] li[data-task="` + a.TaskID + `"]`
			poll[bool](b, "the running task shows at 40%", `(document.querySelector('`+running+`') || {}).textContent?.includes('40%')`)
			b.do("cordon gpu-b", chromedp.SendKeys(chromedp.CSS("#reason"), "fan replacement"),
				chromedp.Click(chromedp.CSS(`#nodes tr[data-node="gpu-b"] button[data-action="cordon"]`)),
				chromedp.WaitVisible(chromedp.CSS(`#nodes tr[data-node="gpu-b"][data-state="cordoned"]`)))
			if st := f.nodeState("gpu-b"); st != admin.NodeCordoned {
				t.Fatalf("gpu-b is %s in the admin API after the console's cordon", st)
			}
			b.do("drain gpu-b", chromedp.Click(chromedp.CSS(`#nodes tr[data-node="gpu-b"] button[data-action="drain"]`)),
				chromedp.WaitVisible(chromedp.CSS(`#nodes tr[data-node="gpu-b"][data-state="draining"]`)), chromedp.WaitVisible(chromedp.CSS(running)))
			b.shot("farm-draining")
			if st := f.nodeState("gpu-b"); st != admin.NodeDraining {
				t.Fatalf("gpu-b is %s in the admin API after the console's drain", st)
			}
			f.complete(credB, a)
			b.do("gpu-b drained", chromedp.WaitVisible(chromedp.CSS(`#nodes tr[data-node="gpu-b"][data-state="drained"]`)))
			if n := eval[int](b, `document.querySelectorAll('`+running+`').length`); n != 0 {
				t.Fatalf("the finished task still shows on gpu-b")
			}
			b.shot("farm-drained")
			b.notReloaded()
		}},
		{"a video's task graph", func(t *testing.T) {
			b.do("inspect the video", chromedp.Click(chromedp.CSS(`a[data-page="video"]`)), chromedp.SendKeys(chromedp.CSS("#video-id"), vid),
				chromedp.Click(chromedp.CSS("#video-form button")),
				chromedp.WaitVisible(chromedp.CSS(`#graph .task[data-task="render"][data-state="done"]`)),
				chromedp.WaitVisible(chromedp.CSS(`#graph .task[data-task="finalize"]`)))
			render := eval[string](b, `document.querySelector('#graph .task[data-task="render"]').textContent`)
			if !strings.Contains(render, "done bygpu-b") || !strings.Contains(render, "took") {
				t.Errorf("the render's box does not name gpu-b or say how long it took: %s", render)
			}
			if got := eval[string](b, `document.getElementById('video-title').textContent`); got != vid {
				t.Errorf("video page shows %q", got)
			}
			b.shot("video")
		}},
		{"webhooks page", func(t *testing.T) {
			b.do("open webhooks", chromedp.Click(chromedp.CSS(`a[data-page="webhooks"]`)),
				chromedp.WaitVisible(chromedp.CSS(`#wh-abandoned tbody tr.empty`)), chromedp.WaitVisible(chromedp.CSS(`#wh-endpoints tbody tr.empty`)))
		}},
		{"accounts page", func(t *testing.T) {
			b.do("open accounts", chromedp.Click(chromedp.CSS(`a[data-page="accounts"]`)),
				chromedp.WaitVisible(chromedp.CSS(`#accounts tbody tr[data-account]`)))
			b.do("open the account", chromedp.Click(chromedp.CSS(`#accounts tbody tr[data-account] a`)),
				chromedp.WaitVisible(chromedp.CSS(`#account-videos tr[data-status]`)))
			if got := eval[string](b, `document.querySelector('#account-videos tbody').textContent`); got != "processing1" {
				t.Errorf("the account's videos by status: %q, want processing 1 (its finalize has not run)", got)
			}
			if n := eval[int](b, `document.querySelectorAll('#account-spend tbody tr[data-day]').length`); n != 14 {
				t.Errorf("%d days of spending shown, want 14", n)
			}
			b.shot("account")
			b.notReloaded()
		}},
		{"on a phone", func(t *testing.T) {
			b.do("a phone's screen", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile),
				chromedp.Click(chromedp.CSS(`a[data-page="farm"]`)), chromedp.WaitVisible(chromedp.CSS(`#nodes tr[data-node="gpu-b"]`)))
			// The page itself does not scroll sideways; wide tables scroll in their box.
			if w := eval[int](b, `document.documentElement.scrollWidth`); w > 400 {
				t.Errorf("the farm page is %d px wide on a 390 px screen", w)
			}
			b.shot("farm-phone")
			b.do("back to a laptop's screen", chromedp.EmulateViewport(1280, 1000))
		}},
		{"logout", func(t *testing.T) {
			b.do("log out", chromedp.Click(chromedp.CSS("#logout")), chromedp.WaitVisible(chromedp.CSS("#login")))
			if st := eval[int](b, `fetch('/console/api/farm').then(r => r.status)`, chromedp.EvalAwaitPromise); st != 401 {
				t.Fatalf("after logout the farm answers %d", st)
			}
		}},
	}
	for _, s := range steps {
		if !t.Run(s.name, func(t *testing.T) {
			b.t, f.t = t, t
			s.run(t)
		}) {
			return // the later steps build on this one
		}
	}
}

// login logs the browser into f's console and waits for the farm page.
func (b *browser) login(f *farm) {
	b.t.Helper()
	b.do("log in", chromedp.Navigate(f.consoleURL()), chromedp.WaitVisible(chromedp.CSS("#login")),
		chromedp.SendKeys(chromedp.CSS("#token"), adminToken), chromedp.Click(chromedp.CSS("#login button")),
		chromedp.WaitVisible(chromedp.CSS("#nodes")))
}

// text is the text of the first element that matches the CSS selector, ""
// when none does.
func text(b *browser, sel string) string {
	b.t.Helper()
	return eval[string](b, `(document.querySelector('`+sel+`') || {}).textContent || ''`)
}

// TestConsoleVideoPageInBrowser: the video page says how many credits a
// refund gave back (part of the charge for a cancel, all of it for a
// failure), gives no percent where the state keeps none, and holds nothing
// of the previous video when the next one does not exist; the queue and
// farm pages count in words and link accounts.
func TestConsoleVideoPageInBrowser(t *testing.T) {
	b := newBrowser(t)
	f := startFarm(t)
	canceled, failed, charged, refunded := refundFarm(t, f)
	waiting := f.video(f.account(), otherModel(t)) // no node runs its model
	w, err := f.admin.InspectVideo(context.Background(), waiting)
	must(t, err, "inspect %s", waiting)
	b.login(f)

	poll[bool](b, "the farm counts one node", `document.getElementById('farm-summary').textContent.startsWith('1 node (1 active) · 2 GPUs')`)

	b.do("open the queue", chromedp.Navigate(f.consoleURL()+"#queue"))
	row := `#waiting tr[data-video="` + waiting + `"]`
	poll[bool](b, "the waiting video shows", `document.querySelector('`+row+`') !== null`)
	if got := text(b, row+` td:nth-child(5)`); got != "render" {
		t.Errorf("the waiting video's task reads %q, want render (once)", got)
	}
	if href := eval[string](b, `(document.querySelector('`+row+` td:nth-child(3) a') || {}).hash || ''`); href != "#accounts/"+w.AccountID {
		t.Errorf("the waiting video's account links to %q, want #accounts/%s", href, w.AccountID)
	}

	facts := `document.querySelector('#video-head .facts').textContent`
	for _, tc := range []struct {
		id, status string
		credits    string
	}{
		{canceled, "canceled", fmt.Sprintf("creditscharged %d, refunded %d", charged, refunded)},
		{failed, "failed", fmt.Sprintf("creditscharged %d, refunded %d", charged, charged)},
	} {
		b.do("open the "+tc.status+" video", chromedp.Navigate(f.consoleURL()+"#video/"+tc.id))
		poll[bool](b, "the "+tc.status+" video shows", `(document.getElementById('video-title') || {}).textContent === '`+tc.id+`'`)
		got := eval[string](b, facts)
		if !strings.Contains(got, tc.credits) || strings.Contains(got, "progress") {
			t.Errorf("the %s video's facts: %q, want %q and no progress", tc.status, got, tc.credits)
		}
	}
	b.shot("video-failed")

	b.do("open a video that does not exist", chromedp.Navigate(f.consoleURL()+"#video/vid_nope"))
	poll[bool](b, "the error shows", `document.getElementById('error').textContent.includes('not found')`)
	if head, graph := text(b, "#video-head"), text(b, "#graph"); head != "" || graph != "" {
		t.Errorf("the page for vid_nope still shows the previous video: %q, graph %q", head, graph)
	}
	b.shot("video-not-found")
}

// otherModel is a model other than the one refundFarm's node runs that
// takes farm.video's request (text to video, 5 s).
func otherModel(t *testing.T) string {
	t.Helper()
	for _, m := range models.All() {
		if m.ID != models.IDs()[0] && m.Supports(models.TextToVideo) && slices.Contains(m.Durations, 5) {
			return m.ID
		}
	}
	t.Fatal("no second model renders text to video in 5 s")
	return ""
}
