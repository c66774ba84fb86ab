package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/vidfarm/vidfarm/client"
	"github.com/vidfarm/vidfarm/textguard"
)

// videoProgress shows a followed video: a bar with the stage and percent on a
// terminal, else one line per change (logs stay readable).
type videoProgress struct {
	w   io.Writer
	bar *progressbar.ProgressBar
	// completed: the last state shown was completed, whose bar stays.
	completed bool
	// last is the last line written off a terminal: a change the line does
	// not show (the wait reason's message, an estimate's bounds) would
	// repeat it.
	last string
}

func newVideoProgress(w io.Writer) *videoProgress {
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return newVideoBar(w)
	}
	return &videoProgress{w: w}
}

// newVideoBar shows the progress as a bar on w, a terminal.
func newVideoBar(w io.Writer) *videoProgress {
	return &videoProgress{w: w, bar: progressbar.NewOptions(100,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetWidth(30),
		progressbar.OptionShowElapsedTimeOnFinish(),
		progressbar.OptionThrottle(100*time.Millisecond),
	)}
}

func (p *videoProgress) update(v client.Video) {
	if p.bar == nil {
		if line := v.ID + " " + progressText(&v); line != p.last {
			p.last = line
			fmt.Fprintln(p.w, line)
		}
		return
	}
	p.completed = v.Status == client.StatusCompleted
	if p.completed {
		// A completed video has no progress to take a percent from: its
		// bar is full. Filled before it is described, as Describe draws at
		// once with the bar's percent of the moment (the last one seen, or
		// 0 for a video that had finished before the watch began).
		_ = p.bar.Set(100)
		p.bar.Describe(progressText(&v))
		return
	}
	p.bar.Describe(progressText(&v))
	percent := 0
	if v.Progress != nil {
		percent = v.Progress.Percent
	}
	_ = p.bar.Set(percent)
}

func (p *videoProgress) finish() {
	if p.bar == nil {
		return
	}
	if p.completed {
		// The full bar stays, with the time it took, on a line of its own.
		_ = p.bar.Finish()
		fmt.Fprintln(p.w)
		return
	}
	// Failed, canceled, a preview, or the wait ended: the bar's percent
	// is not where the video stands; what is printed next says that.
	_ = p.bar.Clear()
}

// progressText is a video's state in a few words: "queued #3 (eta 40-90 s)",
// "processing rendering_scenes 2/5 40%", "completed"; control characters
// from the server are made visible.
func progressText(v *client.Video) string {
	return textguard.Printable(progressWords(v))
}

func progressWords(v *client.Video) string {
	pr := v.Progress
	if pr == nil {
		return v.Status
	}
	if v.Status == client.StatusQueued {
		s := fmt.Sprintf("queued #%d", pr.QueuePosition)
		if pr.ETASeconds != nil {
			s += fmt.Sprintf(" (eta %d-%d s)", pr.ETASeconds.P50, pr.ETASeconds.P90)
		}
		if pr.Reason != "" {
			s += " " + pr.Reason
		}
		return s
	}
	s := v.Status
	if pr.Stage != "" {
		s += " " + pr.Stage
	}
	if pr.ScenesTotal > 0 {
		s += fmt.Sprintf(" %d/%d", pr.ScenesDone, pr.ScenesTotal)
	}
	return fmt.Sprintf("%s %d%%", s, pr.Percent)
}
