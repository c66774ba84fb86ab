package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/vidfarm/vidfarm/client"
)

// videoProgress shows a followed video: a bar with the stage and percent on a
// terminal, else one line per change (logs stay readable).
type videoProgress struct {
	w   io.Writer
	bar *progressbar.ProgressBar
}

func newVideoProgress(w io.Writer) *videoProgress {
	p := &videoProgress{w: w}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.bar = progressbar.NewOptions(100,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetWidth(30),
			progressbar.OptionShowElapsedTimeOnFinish(),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
	}
	return p
}

func (p *videoProgress) update(v client.Video) {
	if p.bar == nil {
		fmt.Fprintf(p.w, "%s %s\n", v.ID, progressText(&v))
		return
	}
	p.bar.Describe(progressText(&v))
	percent := 0
	if v.Progress != nil {
		percent = v.Progress.Percent
	} else if v.Status == client.StatusCompleted {
		percent = 100
	}
	_ = p.bar.Set(percent)
}

func (p *videoProgress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}

// progressText is a video's state in a few words: "queued #3 (eta 40-90 s)",
// "processing rendering_scenes 2/5 40%", "completed".
func progressText(v *client.Video) string {
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
