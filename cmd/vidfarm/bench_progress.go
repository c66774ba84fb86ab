package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress shows how far a long bench run is: a progress bar on a
// terminal, else a line every tenth of the way (logs and CI stay readable).
type progress struct {
	mu    sync.Mutex
	bar   *progressbar.ProgressBar
	w     io.Writer
	desc  string
	total int64
	next  int64 // the next tenth to print, off a terminal
	start time.Time
}

func newProgress(desc string, total int64) *progress {
	p := &progress{w: os.Stderr, desc: desc, total: total, next: 1, start: time.Now()}
	if term.IsTerminal(int(os.Stderr.Fd())) {
		p.bar = progressbar.NewOptions64(total,
			progressbar.OptionSetWriter(os.Stderr),
			progressbar.OptionSetDescription(desc),
			progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
	}
	return p
}

// set moves the progress to n of total.
func (p *progress) set(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		_ = p.bar.Set64(n)
		return
	}
	if p.total <= 0 || p.next > 10 || n*10 < p.next*p.total {
		return
	}
	tenth := min(n*10/p.total, 10) // one line however many tenths were crossed
	fmt.Fprintf(p.w, "%s: %d%% (%d/%d) after %s\n", p.desc, tenth*10, n, p.total, time.Since(p.start).Round(time.Millisecond))
	p.next = tenth + 1
}

// finish ends the bar.
func (p *progress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}
