package pipeline

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/asticode/go-astisub"
)

const ms = time.Millisecond

func TestPlaceLines(t *testing.T) {
	plan := Plan{DurationSeconds: 10, Scenes: []Scene{{Index: 0, StartSeconds: 0, DurationSeconds: 4}, {Index: 1, StartSeconds: 4, DurationSeconds: 6}}}
	lines := []SpokenLine{
		{Scene: 0, Text: "a", Duration: 1000 * ms},
		{Scene: 0, Text: "b", Duration: 3000 * ms}, // runs past the scene: pushes scene 1
		{Scene: 1, Text: "c", Duration: 2000 * ms},
		{Scene: 1, Text: "d", Duration: 3000 * ms}, // cut at the end
		{Scene: 1, Text: "e", Duration: 1000 * ms}, // no room: dropped
	}
	var got [][2]time.Duration
	for _, p := range PlaceLines(plan, lines) {
		got = append(got, [2]time.Duration{p.Start, p.End})
	}
	want := [][2]time.Duration{{300 * ms, 1300 * ms}, {1550 * ms, 4550 * ms}, {4800 * ms, 6800 * ms}, {7050 * ms, 10000 * ms}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("placed %v, want %v", got, want)
	}
}

func TestCaptionCues(t *testing.T) {
	long := "The keeper climbs the winding stairs of the lighthouse at dusk, carrying a lantern and a heavy book of logs for the night."
	cues := CaptionCues([]PlacedLine{
		{SpokenLine: SpokenLine{Text: "Short {\\b1}line."}, Start: time.Second, End: 2 * time.Second},
		{SpokenLine: SpokenLine{Text: long}, Start: 3 * time.Second, End: 9 * time.Second},
	})
	if len(cues) != 3 || cues[0].Text != "Short (/b1)line." || cues[0].Start != time.Second || cues[0].End != 2*time.Second {
		t.Fatalf("cues %+v", cues)
	}
	if cues[1].Start != 3*time.Second || cues[1].End != cues[2].Start || cues[2].End != 9*time.Second || cues[1].End <= cues[1].Start {
		t.Errorf("long line cues %+v", cues[1:])
	}
	for _, c := range cues {
		rows := strings.Split(c.Text, "\n")
		if len(rows) > captionRows {
			t.Errorf("cue %q has %d rows", c.Text, len(rows))
		}
		for _, r := range rows {
			if len([]rune(r)) > captionRow {
				t.Errorf("row %q is longer than %d", r, captionRow)
			}
		}
	}
	if got := strings.Join(strings.Fields(cues[1].Text+" "+cues[2].Text), " "); got != long {
		t.Errorf("cues lose text: %q", got)
	}
}

func TestWriteCaptions(t *testing.T) {
	dir := t.TempDir()
	srt, vtt := filepath.Join(dir, "c.srt"), filepath.Join(dir, "c.vtt")
	cues := []Cue{{Start: 300 * ms, End: 2500 * ms, Text: "Hello <there> & welcome\nsecond row"}, {Start: 2750 * ms, End: 4 * time.Second, Text: "Bye."}}
	if err := WriteCaptions(cues, srt, vtt); err != nil {
		t.Fatal(err)
	}
	// SubRip starts with the first cue's number, no byte-order mark.
	if b, _ := os.ReadFile(srt); !bytes.HasPrefix(b, []byte("1\n")) {
		t.Errorf("srt starts %q", b[:min(len(b), 8)])
	}
	for _, p := range []string{srt, vtt} {
		subs, err := astisub.OpenFile(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if len(subs.Items) != 2 || subs.Items[0].StartAt != 300*ms || subs.Items[0].EndAt != 2500*ms || subs.Items[1].EndAt != 4*time.Second {
			t.Fatalf("%s: %v", p, subs.Items)
		}
		if len(subs.Items[0].Lines) != 2 || subs.Items[0].Lines[0].String() != "Hello <there> & welcome" {
			t.Errorf("%s: first cue %q", p, subs.Items[0].Lines)
		}
	}
	if err := WriteCaptions(nil, srt, vtt); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(vtt); string(b) != "WEBVTT\n" {
		t.Errorf("empty vtt %q", b)
	}
}
