package pipeline

import (
	"context"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// requireTools skips the test when a tool is missing, unless
// VIDFARM_REQUIRE_TOOLS is set (as in CI), in which case it fails.
func requireTools(t testing.TB, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			if os.Getenv("VIDFARM_REQUIRE_TOOLS") != "" {
				t.Fatalf("%s is not installed and VIDFARM_REQUIRE_TOOLS is set", n)
			}
			t.Skipf("%s is not installed (set VIDFARM_REQUIRE_TOOLS to make this a failure)", n)
		}
	}
}

// testTools are fast encoder settings for integration tests.
func testTools() *Tools { return &Tools{Preset: "ultrafast"} }

// testCtx is a context that ends with the test or after a minute.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// writePNG writes a w×h PNG with a diagonal two-colour pattern.
func writePNG(t *testing.T, path string, w, h int, a, b color.RGBA) string {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			if (x/8+y/8)%2 == 0 {
				img.Set(x, y, a)
			} else {
				img.Set(x, y, b)
			}
		}
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := png.Encode(f, img); err != nil {
		t.Fatal(err)
	}
	return path
}

// testImages writes n small distinct PNGs into dir.
func testImages(t *testing.T, dir string, n int) []string {
	t.Helper()
	var out []string
	for i := range n {
		c := uint8(40 * i)
		out = append(out, writePNG(t, filepath.Join(dir, "in"+string(rune('a'+i))+".png"), 160, 120,
			color.RGBA{200, c, 40, 255}, color.RGBA{c, 60, 200, 255}))
	}
	return out
}

// probe runs ffprobe on path or fails the test.
func probe(t *testing.T, path string) MediaInfo {
	t.Helper()
	info, err := Probe(testCtx(t), path)
	if err != nil {
		t.Fatalf("probe %s: %v", path, err)
	}
	return info
}

// near reports whether got is within tol of want.
func near(got, want, tol time.Duration) bool {
	d := got - want
	return d <= tol && d >= -tol
}

// fakeExec records commands and answers them with a function.
type fakeExec struct {
	mu   sync.Mutex
	cmds []Command
	run  func(Command) ([]byte, error)
}

func (f *fakeExec) Run(_ context.Context, c Command) ([]byte, error) {
	f.mu.Lock()
	f.cmds = append(f.cmds, c)
	f.mu.Unlock()
	if f.run == nil {
		return nil, nil
	}
	return f.run(c)
}

// progressLog collects reported percentages.
type progressLog struct {
	mu sync.Mutex
	p  []int
}

func (l *progressLog) fn(p int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.p = append(l.p, p)
}

func (l *progressLog) values() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]int(nil), l.p...)
}

// checkProgress fails unless values increase strictly and end at 100.
func checkProgress(t *testing.T, vals []int) {
	t.Helper()
	if len(vals) == 0 || vals[len(vals)-1] != 100 {
		t.Fatalf("progress %v does not end at 100", vals)
	}
	for i := 1; i < len(vals); i++ {
		if vals[i] <= vals[i-1] {
			t.Fatalf("progress %v is not increasing", vals)
		}
	}
}
