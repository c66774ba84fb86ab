package server

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/controlplane/raftnode"
)

// stateCollector exports the FSM's counts and Raft's indexes at scrape time.
type stateCollector struct {
	f       *fsm.FSM
	node    *raftnode.Node
	videos  *prometheus.Desc
	counts  *prometheus.Desc
	raft    *prometheus.Desc
	leader  *prometheus.Desc
	term    *prometheus.Desc
	voters  *prometheus.Desc
	contact *prometheus.Desc
	tiers   *prometheus.Desc
	file    *prometheus.Desc
	tables  *prometheus.Desc
	ahead   *prometheus.Desc
}

func newStateCollector(f *fsm.FSM, n *raftnode.Node) *stateCollector {
	return &stateCollector{
		f: f, node: n,
		videos: prometheus.NewDesc("vidfarm_videos", "Videos by status.", []string{"status"}, nil),
		counts: prometheus.NewDesc("vidfarm_state_records", "Records in the replicated state by kind.", []string{"kind"}, nil),
		raft:   prometheus.NewDesc("vidfarm_raft_index", "Raft log indexes of this node.", []string{"index"}, nil),
		leader: prometheus.NewDesc("vidfarm_raft_leader", "1 when this node is the Raft leader.", nil, nil),
		// Each election raises the term: changes() or increase() of it counts
		// elections, which no other series shows.
		term:    prometheus.NewDesc("vidfarm_raft_term", "The Raft term this node is in; it rises by one or more at each election.", nil, nil),
		voters:  prometheus.NewDesc("vidfarm_raft_voters", "Voting members in the Raft configuration as this node has it (this node included when it votes).", nil, nil),
		contact: prometheus.NewDesc("vidfarm_raft_last_contact_seconds", "On a follower, the time since it last heard from the leader (0 on the leader; absent before any contact).", nil, nil),
		tiers:   prometheus.NewDesc("vidfarm_state_videos", "Videos held by tier: memory (unfinished, and finished since the last checkpoint) or disk (the state file).", []string{"tier"}, nil),
		file:    prometheus.NewDesc("vidfarm_state_file_bytes", "Size of the state file (state.db).", nil, nil),
		ahead:   prometheus.NewDesc("vidfarm_checkpoint_pending_records", "Videos and task graphs changed since the last checkpoint: still to copy when Raft takes the next snapshot (changed), or copied ahead by the applies (staged).", []string{"state"}, nil),
		tables:  prometheus.NewDesc("vidfarm_state_records_in_memory", "Table records (idempotency records, webhook events and deliveries, the event log, …) held in memory (changed since the last checkpoint, and pending deliveries); the rest is served from the state file.", []string{"kind"}, nil),
	}
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.videos
	ch <- c.counts
	ch <- c.raft
	ch <- c.leader
	ch <- c.term
	ch <- c.voters
	ch <- c.contact
	ch <- c.tiers
	ch <- c.file
	ch <- c.tables
	ch <- c.ahead
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.f.Stats()
	for status, n := range st.ByStatus {
		ch <- prometheus.MustNewConstMetric(c.videos, prometheus.GaugeValue, float64(n), status)
	}
	for kind, n := range map[string]int{"accounts": st.Accounts, "keys": st.Keys, "videos": st.Videos, "idempotency": st.Idempotency, "webhook_events": st.Events, "webhook_deliveries": st.Deliveries, "events": st.LoggedEvents, "queued": st.Queued, "garbage_blobs": st.Garbage, "retrying_tasks": st.Retrying} {
		ch <- prometheus.MustNewConstMetric(c.counts, prometheus.GaugeValue, float64(n), kind)
	}
	stats := c.node.Stats()
	for _, k := range []string{"commit_index", "applied_index", "last_log_index", "last_snapshot_index"} {
		if v, err := strconv.ParseFloat(stats[k], 64); err == nil {
			ch <- prometheus.MustNewConstMetric(c.raft, prometheus.GaugeValue, v, k)
		}
	}
	leader := 0.0
	if c.node.IsLeader() {
		leader = 1
	}
	ch <- prometheus.MustNewConstMetric(c.leader, prometheus.GaugeValue, leader)
	if v, err := strconv.ParseFloat(stats["term"], 64); err == nil {
		ch <- prometheus.MustNewConstMetric(c.term, prometheus.GaugeValue, v)
	}
	if servers, err := c.node.Servers(); err == nil {
		voters := 0
		for _, s := range servers {
			if s.Suffrage == raftnode.SuffrageVoter {
				voters++
			}
		}
		ch <- prometheus.MustNewConstMetric(c.voters, prometheus.GaugeValue, float64(voters))
	}
	// "never" before any contact, "0" on the leader, else a duration.
	if d, err := time.ParseDuration(stats["last_contact"]); err == nil {
		ch <- prometheus.MustNewConstMetric(c.contact, prometheus.GaugeValue, d.Seconds())
	} else if stats["last_contact"] == "0" {
		ch <- prometheus.MustNewConstMetric(c.contact, prometheus.GaugeValue, 0)
	}
	ts := c.f.TierStats()
	ch <- prometheus.MustNewConstMetric(c.tiers, prometheus.GaugeValue, float64(ts.VideosInMemory), "memory")
	ch <- prometheus.MustNewConstMetric(c.tiers, prometheus.GaugeValue, float64(ts.VideosOnDisk), "disk")
	ch <- prometheus.MustNewConstMetric(c.file, prometheus.GaugeValue, float64(ts.StoreBytes))
	for kind, n := range ts.TableMemory {
		ch <- prometheus.MustNewConstMetric(c.tables, prometheus.GaugeValue, float64(n), kind)
	}
	ch <- prometheus.MustNewConstMetric(c.ahead, prometheus.GaugeValue, float64(ts.Changed), "changed")
	ch <- prometheus.MustNewConstMetric(c.ahead, prometheus.GaugeValue, float64(ts.Staged), "staged")
}
