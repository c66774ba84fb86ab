package console

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/vidfarm/vidfarm/controlplane/admin"
	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/scheduler"
)

// The console's JSON, one endpoint per page; each answer is the page whole.
//
//	GET  /console/api/session                     -> 200 SessionJSON
//	GET  /console/api/farm[?q=TEXT&limit=N]       -> 200 FarmJSON
//	GET  /console/api/queue                       -> 200 QueueJSON
//	GET  /console/api/videos/{id}                 -> 200 VideoJSON
//	GET  /console/api/webhooks                    -> 200 WebhooksJSON
//	POST /console/api/nodes/{id}/cordon|drain|uncordon  {"reason", "timeout_seconds"} -> 200 admin.NodeJSON

// NearExpiry is how close to its deadline a lease must be to count as
// stuck: a healthy agent renews its leases every heartbeat (5 s by
// default), long before this.
const NearExpiry = 10 * time.Second

// FarmLimit is how many nodes the farm page lists unless asked for more.
const FarmLimit = 200

// QueueLimit is how many waiting videos the queue page lists, oldest first
// (the admin API's default; `vidfarm admin queue --limit` shows more): each
// costs the scheduler a queue-position estimate.
const QueueLimit = 100

// FarmJSON answers GET /console/api/farm.
type FarmJSON struct {
	GeneratedAt time.Time   `json:"generated_at"`
	Summary     FarmSummary `json:"summary"`
	// Nodes are those that match the page's filter (q: part of a name or
	// id), what needs an operator first (down, draining, cordoned,
	// drained), then by name; at most limit (FarmLimit) of Matched.
	Nodes   []admin.NodeJSON `json:"nodes"`
	Matched int              `json:"matched"`
	// Self is the member that served the page (its Raft state and the
	// bridge's status); Cluster each member's own view.
	Self    admin.ClusterStatus    `json:"self"`
	Cluster *admin.ClusterOverview `json:"cluster"`
	// ClusterError says why the members could not be listed.
	ClusterError string `json:"cluster_error,omitempty"`
	// TelemetryOnLeader: this member is not the leader, so its nodes carry
	// no GPU readings (they live in the leader's memory; the leader's
	// console shows them).
	TelemetryOnLeader bool `json:"telemetry_on_leader,omitempty"`
}

// FarmSummary counts the nodes by state and their GPUs.
type FarmSummary struct {
	Nodes        map[string]int `json:"nodes"` // by admin.NodeJSON.State, and "down"
	GPUs         int            `json:"gpus"`
	BusyGPUs     int            `json:"busy_gpus"`
	RunningTasks int            `json:"running_tasks"`
}

// QueueJSON answers GET /console/api/queue.
type QueueJSON struct {
	GeneratedAt time.Time `json:"generated_at"`
	// Classes count the tasks ready for placement by kind and model, with
	// the longest wait, in this member's state; most first.
	Classes []ClassJSON `json:"classes"`
	// Queue is the admin API's queue: the oldest waiting videos and why.
	Queue admin.QueueJSON `json:"queue"`
	// Expiring are leases within NearExpiry of their deadline (their node
	// missed heartbeats); Retrying the waiting videos whose task failed
	// before.
	Expiring []ExpiringLease     `json:"expiring_leases"`
	Retrying []admin.WaitingJSON `json:"retrying"`
	// Overdue are the running tasks past the p99 of their class's recent
	// service times (OverdueQuantile over the class's last 64 completed
	// tasks on this member, OverdueMinSamples at least), longest past first.
	Overdue []OverdueTask `json:"overdue"`
}

// OverdueQuantile and OverdueMinSamples define "past its p99": a running
// task is stuck when it has run longer than this quantile of its
// requirement class's latest completed tasks (the scheduler keeps 64; with
// 64 the p99 is the slowest of them), and there were at least this many.
const (
	OverdueQuantile   = 0.99
	OverdueMinSamples = 10
	overdueLimit      = 100
)

// OverdueTask is a running task past its class's p99.
type OverdueTask struct {
	Node           string  `json:"node"`
	VideoID        string  `json:"video_id"`
	TaskID         string  `json:"task_id"`
	Kind           string  `json:"kind"`
	Model          string  `json:"model,omitempty"`
	Attempt        int     `json:"attempt"`
	RunningSeconds float64 `json:"running_seconds"`
	P99Seconds     float64 `json:"p99_seconds"`
	Samples        int     `json:"samples"`
}

// ClassJSON is the ready tasks of one kind and model.
type ClassJSON struct {
	Kind          string  `json:"kind"`
	Model         string  `json:"model,omitempty"`
	Tasks         int     `json:"tasks"`
	OldestSeconds float64 `json:"oldest_seconds"`
}

// ExpiringLease is a lease near its deadline.
type ExpiringLease struct {
	admin.RunningTask
	Node             string  `json:"node"`
	RemainingSeconds float64 `json:"remaining_seconds"`
}

// WebhooksJSON answers GET /console/api/webhooks: the customers'
// endpoints that are failing or disabled (the latest trouble first, at most
// EndpointsLimit of EndpointsTotal), the deliveries that gave up, and those
// still retrying after a failed attempt, newest first.
type WebhooksJSON struct {
	GeneratedAt    time.Time            `json:"generated_at"`
	Endpoints      []EndpointJSON       `json:"endpoints"`
	EndpointsTotal int                  `json:"endpoints_total"`
	Abandoned      []admin.DeliveryJSON `json:"abandoned"`
	Retrying       []admin.DeliveryJSON `json:"retrying"`
}

// fail answers an admin API error as the admin API gave it.
func fail(w http.ResponseWriter, r *http.Request, err error) {
	var e *apierr.Error
	if errors.As(err, &e) {
		apierr.Write(w, r, e)
		return
	}
	apierr.Write(w, r, apierr.New(http.StatusBadGateway, apierr.CodeUpstreamError, "the admin API did not answer: "+err.Error()))
}

// memberTimeout bounds how long the farm page waits for the other members'
// own status: a member that is down shows as an error, not a stalled page.
const memberTimeout = time.Second

func (c *Console) farm(w http.ResponseWriter, r *http.Request) { c.answer(w, r, c.farmPage) }

// answer writes a page's snapshot, or its error as the contract's envelope.
func (c *Console) answer(w http.ResponseWriter, r *http.Request, page pageFunc) {
	v, err := page(r)
	if err != nil {
		fail(w, r, err)
		return
	}
	apierr.WriteJSON(w, http.StatusOK, v)
}

// pageFunc builds one page's snapshot for a request (its query names what
// the page shows). Errors are *apierr.Error or the admin API's.
type pageFunc func(r *http.Request) (any, error)

func (c *Console) farmPage(r *http.Request) (any, error) {
	limit, err := intParam(r, "limit", FarmLimit, 1, 10_000)
	if err != nil {
		return nil, err
	}
	type overview struct {
		o   admin.ClusterOverview
		err error
	}
	ch := make(chan overview, 1)
	go func() {
		ctx, cancel := context.WithTimeout(r.Context(), memberTimeout)
		defer cancel()
		o, err := c.admin.ClusterStatusAll(ctx)
		ch <- overview{o, err}
	}()
	var self admin.ClusterStatus
	raw, err := c.admin.ClusterStatus(r.Context())
	if err == nil {
		err = json.Unmarshal(raw, &self)
	}
	ov := <-ch
	if err != nil {
		return nil, err
	}
	nodes := admin.NodeViews(c.cfg.FSM, c.cfg.Telemetry)
	out := FarmJSON{GeneratedAt: c.cfg.Now().UTC(), Summary: summarize(nodes), Self: self, Nodes: []admin.NodeJSON{},
		TelemetryOnLeader: !strings.EqualFold(self.State, "leader")}
	if q := strings.ToLower(strings.TrimSpace(r.URL.Query().Get("q"))); q != "" {
		nodes = slices.DeleteFunc(nodes, func(n admin.NodeJSON) bool {
			return !strings.Contains(strings.ToLower(n.Name), q) && !strings.Contains(n.ID, q)
		})
	}
	slices.SortFunc(nodes, func(a, b admin.NodeJSON) int {
		return cmp.Or(cmp.Compare(concern(a), concern(b)), strings.Compare(a.Name, b.Name), strings.Compare(a.ID, b.ID))
	})
	out.Matched = len(nodes)
	out.Nodes = append(out.Nodes, nodes[:min(limit, len(nodes))]...)
	if ov.err != nil {
		out.ClusterError = ov.err.Error()
	} else {
		out.Cluster = &ov.o
	}
	return &out, nil
}

// concern orders nodes for the farm page: what needs an operator first.
func concern(n admin.NodeJSON) int {
	switch {
	case n.Down:
		return 0
	case n.State == admin.NodeDraining:
		return 1
	case n.State == admin.NodeCordoned:
		return 2
	case n.State == admin.NodeDrained:
		return 3
	}
	return 4
}

// intParam reads a whole-number query parameter in [lo, hi].
func intParam(r *http.Request, name string, def, lo, hi int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, apierr.Invalid(name, fmt.Sprintf("%s must be a whole number from %d to %d", name, lo, hi))
	}
	return n, nil
}

func summarize(nodes []admin.NodeJSON) FarmSummary {
	s := FarmSummary{Nodes: map[string]int{}}
	for _, n := range nodes {
		s.Nodes[n.State]++
		if n.Down {
			s.Nodes["down"]++
		}
		s.GPUs += len(n.GPUs)
		for _, g := range n.GPUs {
			if g.Busy {
				s.BusyGPUs++
			}
		}
		s.RunningTasks += len(n.RunningTasks)
	}
	return s
}

func (c *Console) queue(w http.ResponseWriter, r *http.Request) { c.answer(w, r, c.queuePage) }

func (c *Console) queuePage(r *http.Request) (any, error) {
	f, now := c.cfg.FSM, c.cfg.Now()
	// The two walks of the queue (the oldest waiting, the counts by class)
	// share the state's read lock and run side by side.
	classes := make(chan []ClassJSON, 1)
	go func() { classes <- c.classes(now) }()
	q := admin.QueueView(f, r.URL.Query().Get("account"), QueueLimit)
	out := QueueJSON{GeneratedAt: now.UTC(), Queue: q, Expiring: []ExpiringLease{}, Retrying: []admin.WaitingJSON{}, Overdue: []OverdueTask{}}
	for _, o := range f.OverdueLeases(now, OverdueQuantile, OverdueMinSamples) {
		if len(out.Overdue) == overdueLimit {
			break
		}
		node := o.NodeID
		if n, ok := f.Node(node); ok && n.Name != "" {
			node = n.Name
		}
		out.Overdue = append(out.Overdue, OverdueTask{Node: node, VideoID: o.VideoID, TaskID: o.TaskID, Kind: string(o.Kind),
			Model: o.Req.Model, Attempt: o.Attempt, RunningSeconds: o.Running.Seconds(), P99Seconds: o.Quantile.Seconds(), Samples: o.Samples})
	}
	for _, v := range f.Nodes() {
		if !slices.ContainsFunc(f.NodeLeases(v.Node.ID), func(l scheduler.Lease) bool { return l.Deadline.Sub(now) <= NearExpiry }) {
			continue
		}
		n := admin.NodeView(f, v, nil)
		for _, t := range n.RunningTasks {
			if left := t.Deadline.Sub(now); left <= NearExpiry {
				out.Expiring = append(out.Expiring, ExpiringLease{RunningTask: t, Node: cmp.Or(n.Name, n.ID), RemainingSeconds: left.Seconds()})
			}
		}
	}
	slices.SortFunc(out.Expiring, func(a, b ExpiringLease) int { return a.Deadline.Compare(b.Deadline) })
	for _, v := range q.Waiting {
		if v.Failures > 0 || v.RetryAt != nil {
			out.Retrying = append(out.Retrying, v)
		}
	}
	out.Classes = <-classes
	return &out, nil
}

// classes counts the ready tasks by kind and model.
func (c *Console) classes(now time.Time) []ClassJSON {
	out := []ClassJSON{}
	type key struct {
		kind  scheduler.Kind
		model string
	}
	idx := map[key]int{}
	c.cfg.FSM.EachReadyTask(func(kind scheduler.Kind, model string, readyAt time.Time) {
		k := key{kind, model}
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, ClassJSON{Kind: string(kind), Model: model})
		}
		out[i].Tasks++
		out[i].OldestSeconds = max(out[i].OldestSeconds, now.Sub(readyAt).Seconds())
	})
	slices.SortFunc(out, func(a, b ClassJSON) int {
		return cmp.Or(cmp.Compare(b.Tasks, a.Tasks), strings.Compare(a.Kind, b.Kind), strings.Compare(a.Model, b.Model))
	})
	return out
}

// VideoJSON answers GET /console/api/videos/{id}: the admin API's inspect
// (with the finished tasks' timings), and the names of the nodes its tasks
// name by id.
type VideoJSON struct {
	admin.VideoInspectJSON
	NodeNames map[string]string `json:"node_names"`
}

func (c *Console) video(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	c.answer(w, r, func(*http.Request) (any, error) { return c.videoPage(id) })
}

func (c *Console) videoPage(id string) (any, error) {
	v, ok := admin.VideoView(c.cfg.FSM, id)
	if !ok {
		return nil, apierr.NotFound("video")
	}
	out := VideoJSON{VideoInspectJSON: v, NodeNames: map[string]string{}}
	for _, t := range v.Tasks {
		for _, id := range append([]string{t.Node, t.DoneNode}, t.FailedNodes...) {
			if n, ok := c.cfg.FSM.Node(id); ok && id != "" {
				out.NodeNames[id] = cmp.Or(n.Name, id)
			}
		}
	}
	return out, nil
}

func (c *Console) webhooks(w http.ResponseWriter, r *http.Request) { c.answer(w, r, c.webhooksPage) }

func (c *Console) webhooksPage(*http.Request) (any, error) {
	out := WebhooksJSON{GeneratedAt: c.cfg.Now().UTC(), Retrying: []admin.DeliveryJSON{},
		Abandoned: admin.DeliveriesView(c.cfg.FSM, fsm.DeliveryFilter{State: fsm.DeliveryAbandoned, Limit: 50}).Data}
	for _, d := range admin.DeliveriesView(c.cfg.FSM, fsm.DeliveryFilter{State: fsm.DeliveryPending, Limit: 200}).Data {
		if len(d.Attempts) > 0 {
			out.Retrying = append(out.Retrying, d)
		}
	}
	out.Endpoints, out.EndpointsTotal = endpoints(c.cfg.FSM)
	return &out, nil
}

// maintain cordons, drains or uncordons a node through the admin API.
func (c *Console) maintain(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Reason         string   `json:"reason"`
		TimeoutSeconds *float64 `json:"timeout_seconds"`
	}
	if r.ContentLength != 0 {
		if !decodeBody(w, r, &req) {
			return
		}
	}
	id, action := chi.URLParam(r, "id"), chi.URLParam(r, "action")
	var n admin.NodeJSON
	var err error
	switch action {
	case "cordon":
		n, err = c.admin.CordonNode(r.Context(), id, req.Reason)
	case "drain":
		timeout := admin.DefaultDrainTimeout
		if t := req.TimeoutSeconds; t != nil {
			timeout = time.Duration(*t * float64(time.Second))
		}
		n, err = c.admin.DrainNode(r.Context(), id, timeout, req.Reason)
	case "uncordon":
		n, err = c.admin.UncordonNode(r.Context(), id)
	default:
		apierr.Write(w, r, apierr.New(http.StatusNotFound, apierr.CodeNotFound, "no node action "+action+": use cordon, drain or uncordon"))
		return
	}
	if err != nil {
		c.metrics.actions.WithLabelValues(action, "failed").Inc()
		fail(w, r, err)
		return
	}
	c.metrics.actions.WithLabelValues(action, "ok").Inc()
	c.cfg.Logger.Info("console node maintenance", "action", action, "node_id", n.ID, "node_name", n.Name, "reason", req.Reason)
	apierr.WriteJSON(w, http.StatusOK, n)
}

// decodeBody reads a strict JSON body into v.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 16<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		apierr.Write(w, r, apierr.New(http.StatusBadRequest, apierr.CodeInvalidRequest, "invalid JSON body: "+err.Error()))
		return false
	}
	return true
}
