package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode"

	"github.com/vidfarm/vidfarm/client"
	"github.com/vidfarm/vidfarm/textguard"
)

// TestVideoCLIShowsNoControlCharacters: a video whose name, prompt and error
// hold escape sequences (stored by an older server, or sent by a hostile
// one) is printed by `vidfarm video get`, `list` and `watch` with them made
// visible: the terminal is not retitled or recoloured.
func TestVideoCLIShowsNoControlCharacters(t *testing.T) {
	const evil = "esc \x1b]0;PWNED\x07 \x1b[31mred\u009b2J \u202eevil"
	v := client.Video{ID: "vid_1", Object: "video", Mode: "auto", Status: client.StatusFailed, Name: evil, Prompt: evil,
		Error: &client.VideoError{Message: "render failed: " + evil}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/videos/vid_1":
			_ = json.NewEncoder(w).Encode(v)
		case "/v1/videos":
			_ = json.NewEncoder(w).Encode(client.List[client.Video]{Object: "list", Data: []client.Video{v}, Count: 1, Total: 1})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	c, err := client.New(srv.URL, "vf_test_key")
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"get", "vid_1"}, {"list"}, {"watch", "vid_1"}} {
		t.Run(args[0], func(t *testing.T) {
			var out, log strings.Builder
			cli := &videoCLI{c: c, out: &out, log: &log}
			err := cli.run(context.Background(), args[0], args[1:])
			if args[0] != "watch" && err != nil {
				t.Fatal(err)
			}
			printed := map[string]string{"stdout": out.String(), "stderr": log.String()}
			if err != nil {
				printed["error"] = err.Error() // main prints it on stderr
			}
			for where, s := range printed {
				if i := strings.IndexFunc(s, func(r rune) bool { return r != '\n' && (unicode.IsControl(r) || textguard.Bidi(r)) }); i >= 0 {
					t.Errorf("%s holds a control character at byte %d: %q", where, i, s)
				}
			}
			if !strings.Contains(out.String(), `esc \x1b]0;PWNED\a`) {
				t.Errorf("stdout does not show the prompt with its escapes visible: %q", out.String())
			}
			if args[0] != "watch" && !strings.Contains(out.String(), `\u202eevil`) {
				t.Errorf("stdout does not show the video's name with its direction override visible: %q", out.String())
			}
		})
	}
}

// TestVideoListLabel: a list row shows a video's name when it has one, else
// the start of its prompt in quotes, so the two are told apart.
func TestVideoListLabel(t *testing.T) {
	for _, c := range []struct {
		v    client.Video
		want string
	}{
		{client.Video{Name: "Launch teaser", Prompt: "a fox"}, "Launch teaser"},
		{client.Video{Prompt: "a fox in the snow"}, `"a fox in the snow"`},
		{client.Video{Prompt: strings.Repeat("long ", 20)}, `"` + strings.Repeat("long ", 9) + "lo…" + `"`},
		{client.Video{Name: "Füchse \u202e", Prompt: "x"}, `Füchse \u202e`},
	} {
		if got := listLabel(c.v); got != c.want {
			t.Errorf("listLabel(%+v) = %q, want %q", c.v, got, c.want)
		}
	}
}
