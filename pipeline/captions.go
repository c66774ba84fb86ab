package pipeline

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/asticode/go-astisub"
)

// Narration timing.
const (
	sceneLead     = 300 * time.Millisecond // silence at the start of a scene before its first line
	lineGap       = 250 * time.Millisecond // pause between lines
	captionRow    = 42                     // characters per caption row
	captionRows   = 2                      // rows per caption
	minLineLength = 200 * time.Millisecond // a line that would get less is dropped
)

// PlacedLine is a spoken line with its place on the video's timeline.
type PlacedLine struct {
	SpokenLine
	Start time.Duration
	End   time.Duration // Start+Duration, cut at the end of the video
}

// PlaceLines lays the spoken lines out on the timeline of plan: each
// scene's first line starts shortly after the scene does, the others follow
// with a short pause, and a line never starts before the previous one has
// ended, so a scene whose narration runs long pushes the next one later.
// Lines that would start too close to the end of the video are dropped and
// the last one is cut at the end.
func PlaceLines(plan Plan, lines []SpokenLine) []PlacedLine {
	total := time.Duration(plan.DurationSeconds) * time.Second
	var out []PlacedLine
	var cursor time.Duration
	prevScene := -1
	for _, l := range lines {
		start := cursor
		if l.Scene != prevScene && l.Scene >= 0 && l.Scene < len(plan.Scenes) {
			start = max(start, time.Duration(plan.Scenes[l.Scene].StartSeconds)*time.Second+sceneLead)
		}
		prevScene = l.Scene
		if start+minLineLength > total {
			break
		}
		end := min(start+l.Duration, total)
		out = append(out, PlacedLine{SpokenLine: l, Start: start, End: end})
		cursor = end + lineGap
	}
	return out
}

// Cue is one caption: rows of text shown from Start to End.
type Cue struct {
	Start, End time.Duration
	Text       string // rows separated by "\n"
}

// CaptionCues cuts each placed line into captions of at most two rows of 42
// characters, sharing the line's spoken time between them by length.
func CaptionCues(placed []PlacedLine) []Cue {
	var cues []Cue
	for _, p := range placed {
		chunks := captionChunks(p.Text)
		total := 0
		for _, c := range chunks {
			total += len([]rune(c))
		}
		span, at, done := p.End-p.Start, p.Start, 0
		for i, c := range chunks {
			done += len([]rune(c))
			end := p.Start + span*time.Duration(done)/time.Duration(total)
			if i == len(chunks)-1 {
				end = p.End
			}
			cues = append(cues, Cue{Start: at, End: end, Text: c})
			at = end
		}
	}
	return cues
}

// captionChunks wraps text into rows of at most captionRow characters (a
// longer word gets a row of its own) and groups the rows into captions.
// Characters that subtitle renderers treat as markup are replaced.
func captionChunks(text string) []string {
	text = strings.NewReplacer("{", "(", "}", ")", `\`, "/").Replace(text)
	var rows []string
	row := ""
	for _, w := range strings.Fields(text) {
		if row != "" && len([]rune(row))+1+len([]rune(w)) > captionRow {
			rows = append(rows, row)
			row = ""
		}
		row = strings.TrimSpace(row + " " + w)
	}
	if row != "" {
		rows = append(rows, row)
	}
	var chunks []string
	for i := 0; i < len(rows); i += captionRows {
		chunks = append(chunks, strings.Join(rows[i:min(i+captionRows, len(rows))], "\n"))
	}
	return chunks
}

// captionSubtitles converts cues to go-astisub subtitles.
func captionSubtitles(cues []Cue) *astisub.Subtitles {
	subs := astisub.NewSubtitles()
	for _, c := range cues {
		item := &astisub.Item{StartAt: c.Start, EndAt: c.End}
		for _, row := range strings.Split(c.Text, "\n") {
			item.Lines = append(item.Lines, astisub.Line{Items: []astisub.LineItem{{Text: row}}})
		}
		subs.Items = append(subs.Items, item)
	}
	return subs
}

// WriteCaptions writes cues as SubRip (srtPath) and WebVTT (vttPath) with
// go-astisub. With no cues it writes an empty SRT and a WebVTT header.
func WriteCaptions(cues []Cue, srtPath, vttPath string) error {
	subs := captionSubtitles(cues)
	write := func(path string, enc func(*os.File) error, empty string) error {
		f, err := os.Create(path)
		if err != nil {
			return fmt.Errorf("captions: %w", err)
		}
		if len(cues) == 0 {
			_, err = f.WriteString(empty)
		} else {
			err = enc(f)
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("captions %s: %w", path, err)
		}
		return nil
	}
	// go-astisub starts SubRip with a UTF-8 byte-order mark, which SubRip
	// does not call for and which shows up as a stray character before the
	// first cue number in tools that read the file as plain text.
	srt := func(f *os.File) error {
		var b bytes.Buffer
		if err := subs.WriteToSRT(&b); err != nil {
			return err
		}
		_, err := f.Write(bytes.TrimPrefix(b.Bytes(), astisub.BytesBOM))
		return err
	}
	if err := write(srtPath, srt, ""); err != nil {
		return err
	}
	return write(vttPath, func(f *os.File) error { return subs.WriteToWebVTT(f) }, "WEBVTT\n")
}
