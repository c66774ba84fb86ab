// Package telemetry keeps the GPU telemetry agents send with their
// heartbeats (scheduler/wire.GPUSample): each node's latest sample and when
// it arrived, in this control-plane member's memory.
//
// It is deliberately not replicated through Raft: it changes every few
// seconds on every node, nothing deterministic depends on it (placement
// reads the registered capacity), and a lost sample is replaced by the next
// heartbeat. Agent requests that reach a follower are forwarded to the
// leader, so the leader's Store sees every heartbeat; a follower's stays
// empty, and a new leader has a node's telemetry again at its next
// heartbeat.
//
// A sample older than Config.StaleAfter is shown as stale; one older than
// ForgetAfter, or of a node that deregistered, is forgotten.
package telemetry

import (
	"maps"
	"sync"
	"time"
)

// GPU is one GPU's reading, as the agent sent it (wire.GPUSample); a nil
// value is one the GPU does not report.
type GPU struct {
	MemoryUsedGB       float64
	UtilizationPercent *float64
	TemperatureC       *float64
	PowerW             *float64
}

// Sample is a node's latest telemetry. Readers must not modify GPUs.
type Sample struct {
	// At is when the heartbeat that carried it arrived.
	At time.Time
	// Stale: no newer sample for Config.StaleAfter (the agent missed
	// heartbeats, or stopped sending telemetry).
	Stale bool
	GPUs  map[string]GPU // by GPU id
}

// Heartbeat intervals after which a sample is stale, and forgotten.
const (
	DefaultStaleIntervals  = 3
	DefaultForgetIntervals = 12
)

// Config tunes a Store.
type Config struct {
	// StaleAfter and ForgetAfter are the ages at which a sample is marked
	// stale and dropped; ForgetAfter is at least StaleAfter.
	StaleAfter, ForgetAfter time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// ForHeartbeats is the Config for agents told to heartbeat every interval:
// stale after DefaultStaleIntervals missed beats, forgotten after
// DefaultForgetIntervals.
func ForHeartbeats(interval time.Duration) Config {
	return Config{StaleAfter: DefaultStaleIntervals * interval, ForgetAfter: DefaultForgetIntervals * interval}
}

// Store holds the latest sample of each node. The zero value is not usable;
// a nil *Store holds nothing and takes nothing, so a component without
// telemetry needs no special case.
type Store struct {
	cfg Config

	mu        sync.Mutex
	nodes     map[string]Sample
	paused    map[string]pause // nodes whose agents say they lease nothing now, and why
	lastSweep time.Time
}

type pause struct {
	reason string
	at     time.Time
}

// New returns an empty Store.
func New(cfg Config) *Store {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.ForgetAfter = max(cfg.ForgetAfter, cfg.StaleAfter)
	return &Store{cfg: cfg, nodes: map[string]Sample{}, paused: map[string]pause{}}
}

// Put records nodeID's sample, replacing the one before; gpus is kept as
// given (the caller hands it over). It also drops the samples past
// ForgetAfter, at most once per StaleAfter, so nodes that vanished without
// deregistering do not pile up.
func (s *Store) Put(nodeID string, gpus map[string]GPU) {
	if s == nil {
		return
	}
	now := s.cfg.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nodes[nodeID] = Sample{At: now, GPUs: gpus}
	if now.Sub(s.lastSweep) < s.cfg.StaleAfter {
		return
	}
	s.lastSweep = now
	maps.DeleteFunc(s.nodes, func(_ string, v Sample) bool { return now.Sub(v.At) > s.cfg.ForgetAfter })
	maps.DeleteFunc(s.paused, func(_ string, p pause) bool { return now.Sub(p.at) > s.cfg.ForgetAfter })
}

// Get returns nodeID's latest sample, unless there is none or it is past
// ForgetAfter.
func (s *Store) Get(nodeID string) (Sample, bool) {
	if s == nil {
		return Sample{}, false
	}
	now := s.cfg.Now()
	s.mu.Lock()
	v, ok := s.nodes[nodeID]
	s.mu.Unlock()
	age := now.Sub(v.At)
	if !ok || age > s.cfg.ForgetAfter {
		return Sample{}, false
	}
	v.Stale = age > s.cfg.StaleAfter
	return v, true
}

// Forget drops nodeID's sample and pause: it deregistered.
func (s *Store) Forget(nodeID string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	delete(s.nodes, nodeID)
	delete(s.paused, nodeID)
	s.mu.Unlock()
}

// SetPaused records why nodeID's agent leases no work now (its heartbeat's
// paused), or that it leases again ("").
func (s *Store) SetPaused(nodeID, reason string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if reason == "" {
		delete(s.paused, nodeID)
		return
	}
	s.paused[nodeID] = pause{reason: reason, at: s.cfg.Now()}
}

// Paused is why nodeID's agent said at its last heartbeats that it leases
// nothing; "" when it did not, or said so longer than ForgetAfter ago (it
// went silent).
func (s *Store) Paused(nodeID string) string {
	if s == nil {
		return ""
	}
	s.mu.Lock()
	p, ok := s.paused[nodeID]
	s.mu.Unlock()
	if !ok || s.cfg.Now().Sub(p.at) > s.cfg.ForgetAfter {
		return ""
	}
	return p.reason
}

// Each calls fn with every sample not past ForgetAfter, under the Store's
// lock: fn must not call the Store.
func (s *Store) Each(fn func(nodeID string, v Sample)) {
	if s == nil {
		return
	}
	now := s.cfg.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, v := range s.nodes {
		if age := now.Sub(v.At); age <= s.cfg.ForgetAfter {
			v.Stale = age > s.cfg.StaleAfter
			fn(id, v)
		}
	}
}
