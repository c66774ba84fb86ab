package main

import (
	"bytes"
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
	p.update(client.Video{ID: "vid_1", Status: "completed"})
	p.finish()
	if want := "vid_1 processing rendering 15%\nvid_1 completed\n"; b.String() != want {
		t.Errorf("printed %q, want %q", b.String(), want)
	}
}
