package admin

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/textguard"
)

// Queue lists the oldest waiting videos (of one account, "" for all), at
// most limit (0: the server's default).
func (c *Client) Queue(ctx context.Context, account string, limit int) (QueueJSON, error) {
	q := url.Values{}
	if account != "" {
		q.Set("account", account)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	path := "/admin/v1/queue"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var out QueueJSON
	err := c.into(ctx, http.MethodGet, path, nil, &out)
	return out, err
}

// InspectVideo reads a video of any account with its task graph.
func (c *Client) InspectVideo(ctx context.Context, id string) (VideoInspectJSON, error) {
	var out VideoInspectJSON
	if id == "" {
		return out, fmt.Errorf("video inspect: name the video (vid_…)")
	}
	err := c.into(ctx, http.MethodGet, "/admin/v1/videos/"+url.PathEscape(id), nil, &out)
	return out, err
}

// WriteQueueTable writes the queue for a terminal: a summary line, then one
// line a waiting video, ages relative to now.
func WriteQueueTable(w io.Writer, q QueueJSON, now time.Time) error {
	more := ""
	if q.HasMore {
		more = " (more wait: raise --limit)"
	}
	fmt.Fprintf(w, "%d unfinished videos, %d tasks ready; %d waiting shown, oldest first%s\n",
		q.UnfinishedVideos, q.ReadyTasks, len(q.Waiting), more)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "VIDEO\tACCOUNT\tMODEL\tTASK\tPOSITION\tREASON\tWAITING\tAGE\tMESSAGE")
	for _, v := range q.Waiting {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", textguard.Printable(v.VideoID), textguard.Printable(v.AccountID), dash(v.Model), dash(v.Task),
			v.QueuePosition, textguard.Printable(v.Reason), agoPtr(now, v.WaitingSince), ago(now, v.CreatedAt), textguard.Printable(v.Message))
	}
	return tw.Flush()
}

// WriteVideoInspect writes a video and its task graph for a terminal.
func WriteVideoInspect(w io.Writer, v VideoInspectJSON, now time.Time) error {
	fmt.Fprintf(w, "%s  account %s  %s %s  %s  ", textguard.Printable(v.VideoID), textguard.Printable(v.AccountID), textguard.Printable(v.Mode), dash(v.Model), textguard.Printable(v.Status))
	// The state does not keep where a failed or canceled video stopped:
	// its percent (0) would read as "stopped before it began".
	if v.Status != fsm.StatusFailed && v.Status != fsm.StatusCanceled {
		fmt.Fprintf(w, "%d%%  ", v.Percent)
	}
	fmt.Fprintf(w, "charged %d", v.CreditsCharged)
	switch {
	case v.RefundedCredits > 0:
		fmt.Fprintf(w, ", refunded %d", v.RefundedCredits)
	case v.CreditsRefunded: // nothing to give back, or a server from before refunded_credits
		fmt.Fprint(w, " (refunded)")
	}
	fmt.Fprintf(w, "\ncreated %s, started %s, finished %s\n", ago(now, v.CreatedAt), agoPtr(now, v.StartedAt), agoPtr(now, v.FinishedAt))
	if v.Reason != "" {
		fmt.Fprintf(w, "waiting: %s (position %d): %s\n", textguard.Printable(v.Reason), v.QueuePosition, textguard.Printable(v.Message))
	}
	if v.Error != "" {
		fmt.Fprintf(w, "error: %s\n", textguard.Printable(v.Error))
	}
	if len(v.Tasks) == 0 {
		if _, err := fmt.Fprintln(w, "no task graph: the scheduler forgets a video's tasks once it has finished"); err != nil {
			return err
		}
		return writeTimings(w, v.Timings)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tKIND\tSTATE\tAFTER\tNODE\tATTEMPTS\tFAILURES\tPERCENT\tREADY\tLEASED\tLAST FAILURE")
	for _, t := range v.Tasks {
		node := t.Node
		if node == "" {
			node = t.DoneNode
		}
		after := "-"
		if len(t.Deps) > 0 {
			after = textguard.Printable(fmt.Sprint(t.Deps))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%.0f\t%s\t%s\t%s\n", textguard.Printable(t.Name), textguard.Printable(t.Kind), textguard.Printable(t.State), after, dash(node), t.Attempts,
			t.Failures, t.Percent, agoPtr(now, t.ReadySince), agoPtr(now, t.Leased), dash(t.LastFailure))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return writeTimings(w, v.Timings)
}

// writeTimings lists the finished tasks' times, in the order they
// finished.
func writeTimings(w io.Writer, ts []TimingJSON) error {
	if len(ts) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nfinished tasks, in the order they finished:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tMODEL\tGPU\tSECONDS")
	for _, t := range ts {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.1f\n", textguard.Printable(t.Kind), dash(t.Model), dash(t.GPU), t.Seconds)
	}
	return tw.Flush()
}
