package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/vidfarm/vidfarm/client"
)

func TestProgressText(t *testing.T) {
	cases := []struct {
		v    client.Video
		want string
	}{
		{client.Video{Status: "queued", Progress: &client.VideoProgress{QueuePosition: 3}}, "queued #3"},
		{client.Video{Status: "queued", Progress: &client.VideoProgress{QueuePosition: 2, Reason: "all_matching_nodes_busy",
			ETASeconds: &client.ETA{P50: 40, P90: 90}}}, "queued #2 (eta 40-90 s) all_matching_nodes_busy"},
		{client.Video{Status: "processing", Progress: &client.VideoProgress{Percent: 40, Stage: "rendering_scenes", ScenesDone: 2, ScenesTotal: 5}},
			"processing rendering_scenes 2/5 40%"},
		{client.Video{Status: "processing", Progress: &client.VideoProgress{Percent: 85, Stage: "finalizing"}}, "processing finalizing 85%"},
		{client.Video{Status: "completed"}, "completed"},
	}
	for _, tc := range cases {
		if got := progressText(&tc.v); got != tc.want {
			t.Errorf("progressText(%+v) = %q, want %q", tc.v.Progress, got, tc.want)
		}
	}
}

// Off a terminal the progress is one line per change, so logs stay readable.
func TestVideoProgressOffTerminal(t *testing.T) {
	var b bytes.Buffer
	p := newVideoProgress(&b)
	p.update(client.Video{ID: "vid_1", Status: "processing", Progress: &client.VideoProgress{Percent: 15, Stage: "rendering"}})
	// A change the line does not show writes no second line.
	p.update(client.Video{ID: "vid_1", Status: "processing", Progress: &client.VideoProgress{Percent: 15, Stage: "rendering", QueuePosition: 2}})
	p.update(client.Video{ID: "vid_1", Status: "completed"})
	p.finish()
	if want := "vid_1 processing rendering 15%\nvid_1 completed\n"; b.String() != want {
		t.Errorf("printed %q, want %q", b.String(), want)
	}
}

// screen is what a terminal shows after out: each \r takes the cursor back
// to the start of the line, and what follows overwrites what was there.
func screen(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		var line []rune
		col := 0
		for _, r := range l {
			if r == '\r' {
				col = 0
				continue
			}
			if col < len(line) {
				line[col] = r
			} else {
				line = append(line, r)
			}
			col++
		}
		lines = append(lines, strings.TrimRight(string(line), " "))
	}
	return lines
}

// TestVideoBarEnds: on a terminal a completed video's bar ends full, also
// when it had completed before the watch began (no progress to read), and
// no frame of the bar shows it completed at less; any other end clears the
// bar, whose percent is then not where the video stands.
func TestVideoBarEnds(t *testing.T) {
	processing := client.Video{ID: "vid_1", Status: "processing", Progress: &client.VideoProgress{Percent: 96, Stage: "finalizing"}}
	completed := client.Video{ID: "vid_1", Status: "completed"}
	canceled := client.Video{ID: "vid_1", Status: "canceled"}
	cases := []struct {
		name    string
		updates []client.Video
		want    string // the start of the last line left on the terminal ("": none)
	}{
		{"create --wait", []client.Video{processing, completed}, "completed 100% |"},
		{"watch of a completed video", []client.Video{completed}, "completed 100% |"},
		{"canceled", []client.Video{processing, canceled}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			p := newVideoBar(&b)
			for _, v := range tc.updates {
				p.update(v)
			}
			p.finish()
			for frame := range strings.SplitSeq(b.String(), "\r") {
				if strings.Contains(frame, "completed") && !strings.Contains(frame, "100%") {
					t.Errorf("a frame shows the completed video at less than 100%%: %q", frame)
				}
			}
			last := ""
			for _, l := range screen(b.String()) {
				if l != "" {
					last = l
				}
			}
			if tc.want == "" && last != "" || !strings.HasPrefix(last, tc.want) {
				t.Errorf("the terminal ends with %q, want %q…", last, tc.want)
			}
		})
	}
}
