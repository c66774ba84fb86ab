package admin

import (
	"cmp"
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

// What the farm did, for a twin of it in the simulator:
//
//	GET /admin/v1/history[?since=168h]  -> 200 wire.History
//
// since is a Go duration back from now, at most maxHistory.

// maxHistory bounds the window: the longest a planner would replay, and
// the walk's cost.
const maxHistory = 90 * 24 * time.Hour

func (s *server) history(w http.ResponseWriter, r *http.Request) {
	since := 168 * time.Hour
	if v := r.URL.Query().Get("since"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 || d > maxHistory {
			apierr.Write(w, r, apierr.Invalid("since", "since must be a duration from 1s to 2160h (90 days), such as 168h; got "+v))
			return
		}
		since = d
	}
	to := s.cfg.Now().UTC()
	apierr.WriteJSON(w, http.StatusOK, farmHistory(s.cfg.FSM, to.Add(-since), to))
}

// farmHistory sums up the videos created in [from, to] and the nodes
// registered now.
func farmHistory(f *fsm.FSM, from, to time.Time) wire.History {
	type arrivalKey struct {
		class, mode, model, res string
		dur                     int
	}
	type taskKey struct {
		kind, mode, model, res, gpu string
		dur                         int
	}
	hours := int(to.Sub(from)/time.Hour) + 1
	h := wire.History{From: from, To: to, Hourly: make([]int, hours)}
	if began := f.Began(); began != 0 {
		h.Began = time.Unix(0, began).UTC()
	}
	classes := map[string]*wire.HistoryClass{}
	accounts := map[string]bool{}
	arrivals := map[arrivalKey]int{}
	tasks := map[taskKey]*wire.HistoryTasks{}
	f.EachCreatedSince(from.UnixNano(), func(v fsm.HistoryVideo) {
		at := time.Unix(0, v.CreatedAt)
		if at.After(to) {
			return
		}
		h.Hourly[int(at.Sub(from)/time.Hour)]++
		c := classes[v.Plan]
		if c == nil {
			c = &wire.HistoryClass{Name: v.Plan, Priority: v.Priority}
			classes[v.Plan] = c
		}
		c.Videos++
		if !accounts[v.AccountID] {
			accounts[v.AccountID] = true
			c.Accounts++
		}
		sp := v.Spec
		arrivals[arrivalKey{v.Plan, sp.Mode, sp.Model, sp.Resolution, sp.DurationSeconds}]++
		for _, t := range v.Timings {
			k := taskKey{t.Kind, sp.Mode, t.Model, "", t.GPU, sp.DurationSeconds}
			if t.Model != "" {
				k.res = sp.Resolution
			}
			ht := tasks[k]
			if ht == nil {
				ht = &wire.HistoryTasks{Kind: k.kind, Mode: k.mode, Model: k.model, Resolution: k.res, GPU: k.gpu, DurationSeconds: k.dur}
				tasks[k] = ht
			}
			ht.Count++
			ht.Seconds += float64(t.Millis) / 1000
		}
	})
	for _, c := range classes {
		h.Classes = append(h.Classes, *c)
	}
	slices.SortFunc(h.Classes, func(a, b wire.HistoryClass) int { return cmp.Compare(a.Name, b.Name) })
	for k, n := range arrivals {
		h.Arrivals = append(h.Arrivals, wire.HistoryArrival{Class: k.class, Mode: k.mode, Model: k.model, Resolution: k.res, DurationSeconds: k.dur, Count: n})
	}
	slices.SortFunc(h.Arrivals, func(a, b wire.HistoryArrival) int {
		return cmp.Or(cmp.Compare(a.Class, b.Class), cmp.Compare(a.Mode, b.Mode), cmp.Compare(a.Model, b.Model),
			cmp.Compare(a.Resolution, b.Resolution), cmp.Compare(a.DurationSeconds, b.DurationSeconds))
	})
	for _, t := range tasks {
		h.Tasks = append(h.Tasks, *t)
	}
	slices.SortFunc(h.Tasks, func(a, b wire.HistoryTasks) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Mode, b.Mode), cmp.Compare(a.Model, b.Model), cmp.Compare(a.Resolution, b.Resolution),
			cmp.Compare(a.GPU, b.GPU), cmp.Compare(a.DurationSeconds, b.DurationSeconds))
	})
	h.Nodes = nodeShapes(f.Nodes())
	return h
}

// nodeShapes groups the live nodes by GPU kind, GPU count and memory, CPU
// slots and models. Down nodes are left out: the twin is the farm that runs.
func nodeShapes(nodes []fsm.NodeView) []wire.HistoryNodes {
	var out []wire.HistoryNodes
	for _, n := range nodes {
		if n.Info.Down {
			continue
		}
		s := wire.HistoryNodes{GPUs: len(n.Info.GPUs), CPUSlots: n.Info.CPUSlots, Models: slices.Sorted(slices.Values(n.Info.Models)), Count: 1}
		for _, g := range n.Info.GPUs {
			s.GPU, s.GPUMemoryGB = g.Model, max(s.GPUMemoryGB, g.MemoryTotalGB)
		}
		i := slices.IndexFunc(out, func(o wire.HistoryNodes) bool {
			return o.GPU == s.GPU && o.GPUs == s.GPUs && o.GPUMemoryGB == s.GPUMemoryGB && o.CPUSlots == s.CPUSlots && slices.Equal(o.Models, s.Models)
		})
		if i >= 0 {
			out[i].Count++
			continue
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b wire.HistoryNodes) int {
		return cmp.Or(cmp.Compare(a.GPU, b.GPU), cmp.Compare(a.GPUs, b.GPUs), cmp.Compare(a.CPUSlots, b.CPUSlots))
	})
	return out
}

// History reads GET /admin/v1/history for the window since back from now.
func (c *Client) History(ctx context.Context, since time.Duration) (wire.History, error) {
	var h wire.History
	err := c.into(ctx, http.MethodGet, "/admin/v1/history?since="+url.QueryEscape(strings.TrimSpace(since.String())), nil, &h)
	return h, err
}
