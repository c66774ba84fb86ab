package pipeline

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestCheckFFmpeg(t *testing.T) {
	requireTools(t, "ffmpeg")
	ctx := testCtx(t)
	if err := testTools().CheckFFmpeg(ctx); err != nil {
		t.Fatalf("CheckFFmpeg with this machine's ffmpeg: %v", err)
	}

	// An FFmpeg without gradients, xfade and libx264, as an old distribution
	// package or a build without GPL parts is: the real ffmpeg with those
	// lines taken out of what it lists.
	dir := t.TempDir()
	script := filepath.Join(dir, "ffmpeg")
	body := "#!/bin/sh\nffmpeg \"$@\" | grep -Ev ' (gradients|xfade|libx264) '\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	err := (&Tools{FFmpeg: script}).CheckFFmpeg(ctx)
	if !errors.Is(err, ErrToolUnfit) {
		t.Fatalf("CheckFFmpeg without gradients = %v, want ErrToolUnfit", err)
	}
	for _, want := range []string{"filters gradients, xfade", "encoders libx264", "(version ", "4.4 or newer"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "version unknown") {
		t.Errorf("error %q does not name the version ffmpeg -version gives", err)
	}

	err = (&Tools{FFmpeg: "vidfarm-no-such-ffmpeg"}).CheckFFmpeg(ctx)
	if !errors.Is(err, ErrToolMissing) || errors.Is(err, ErrToolUnfit) {
		t.Errorf("CheckFFmpeg of a missing program = %v, want ErrToolMissing", err)
	}
}

func TestFFmpegListParsers(t *testing.T) {
	filters := filterNames([]byte("Filters:\n  T.. = Timeline support\n  A = Audio input/output\n" +
		" ... abench            A->A       Benchmark part of a filtergraph.\n" +
		" TSC xfade             VV->V      Cross fade one video with another video.\n" +
		" ... gradients         |->V       Draw a gradients.\n"))
	if want := map[string]bool{"abench": true, "xfade": true, "gradients": true}; !equalSets(filters, want) {
		t.Errorf("filters = %v, want %v", filters, want)
	}
	encoders := encoderNames([]byte("Encoders:\n V..... = Video\n A..... = Audio\n ------\n" +
		" V....D libx264              libx264 H.264 (codec h264)\n A....D aac                  AAC (Advanced Audio Coding)\n"))
	if want := map[string]bool{"libx264": true, "aac": true}; !equalSets(encoders, want) {
		t.Errorf("encoders = %v, want %v", encoders, want)
	}
}

func equalSets(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

// TestFFmpegFiltersListed keeps ffmpegFilters in step with the filter graphs:
// every word in this package's string literals that stands where a filter
// stands ("name=…", or alone between the separators of a graph) and is a
// filter of the real ffmpeg must be listed, and every listed filter used.
func TestFFmpegFiltersListed(t *testing.T) {
	requireTools(t, "ffmpeg")
	out, err := OSExecutor{}.Run(testCtx(t), Command{Name: "ffmpeg", Args: []string{"-hide_banner", "-filters"}})
	if err != nil {
		t.Fatal(err)
	}
	real := filterNames(out)
	used := map[string]bool{}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	word := regexp.MustCompile(`[a-z][a-z0-9_]*`)
	verb := regexp.MustCompile(`%[-+# 0-9.*]*[a-zA-Z]`) // a Sprintf verb may stand for a pad or a chain
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			if !strings.ContainsAny(s, "=[") {
				return true // a word, not a graph: a codec ("copy"), a prompt's keyword
			}
			s = verb.ReplaceAllString(s, ",")
			for _, m := range word.FindAllStringIndex(s, -1) {
				before, after := byte(','), byte(',')
				if m[0] > 0 {
					before = s[m[0]-1]
				}
				if m[1] < len(s) {
					after = s[m[1]]
				}
				// A filter starts a graph, a chain link or follows its input
				// pads; an option ("normalize=0") follows ':' or '='.
				if w := s[m[0]:m[1]]; real[w] && strings.IndexByte(",;]", before) >= 0 && strings.IndexByte("=,;[", after) >= 0 {
					used[w] = true
				}
			}
			return true
		})
	}
	for w := range used {
		if !slices.Contains(ffmpegFilters, w) {
			t.Errorf("filter %q is used in a graph but not in ffmpegFilters: CheckFFmpeg would pass an ffmpeg without it", w)
		}
	}
	for _, w := range ffmpegFilters {
		if !used[w] {
			t.Errorf("ffmpegFilters lists %q, which no graph in this package uses", w)
		}
	}
}
