package server

import (
	"context"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/agentapi"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// DefaultRetryBackoff is the base wait before a task that failed on every
// node able to run it is tried again: 10 s, 20 s, 40 s … up to 5 min 20 s.
const DefaultRetryBackoff = 10 * time.Second

// leaderJobs runs what only the leader does; each tick checks leadership, so a
// node that loses it stops and a new leader picks up from FSM state. The
// upload sweep runs on every node.
func (s *Server) leaderJobs(ctx context.Context) {
	idem := time.NewTicker(time.Minute)
	defer idem.Stop()
	leases := time.NewTicker(time.Second)
	defer leases.Stop()
	assets := time.NewTicker(min(s.cfg.PendingAssetTTL/4, time.Minute))
	defer assets.Stop()
	garbage := time.NewTicker(s.cfg.GarbageInterval)
	defer garbage.Stop()
	uploads := time.NewTicker(s.cfg.UploadSweepInterval)
	defer uploads.Stop()
	failing := time.NewTicker(s.cfg.WebhookDisableCheck)
	defer failing.Stop()
	if s.Node.IsLeader() {
		s.publishSelf(ctx)
	}
	wasLeader := false
	var leaderSince time.Time // when this node last became leader
	// level is the highest command type every member understands; when it
	// rises (the last old member was upgraded) the jobs whose commands the
	// upgrade gate refused run again at once.
	var level fsm.MessageType
	for {
		select {
		case <-ctx.Done():
			return
		case <-idem.C:
			if s.Node.IsLeader() {
				s.expireIdempotency(ctx)
				s.resealSecrets(ctx)
				s.trimEventLog(ctx)
			}
		case <-assets.C:
			if s.Node.IsLeader() {
				s.expirePendingAssets(ctx)
			}
		case <-failing.C:
			if s.Node.IsLeader() {
				s.disableFailingWebhooks(ctx)
				s.abandonDisabledDeliveries(ctx)
			}
		case <-garbage.C:
			if s.Node.IsLeader() {
				s.collectGarbage(ctx)
			}
		case <-uploads.C:
			// On every node, leader or not: with local stores each node keeps
			// the uploads it took while it led.
			s.expireUploads(ctx)
			if s.Node.IsLeader() {
				s.expireSpeech(ctx)
				s.sweepIntermediates(ctx)
			}
		case <-leases.C:
			leader := s.Node.IsLeader()
			if leader && !wasLeader {
				leaderSince = time.Now()
				s.webhooks.Notify() // a new leader carries on with the outbox at once
				s.publishSelf(ctx)  // before the gate reads the levels
				s.resealSecrets(ctx)
				s.sweepIntermediates(ctx)
			}
			was := level
			level = s.clusterLevel()
			if leader && wasLeader && level > was {
				s.log.Info("every member understands newer commands: running the jobs that waited for them", "understood_before", uint8(was), "understands", uint8(level))
				s.resealSecrets(ctx)
				s.sweepIntermediates(ctx)
				s.expireSpeech(ctx)
				s.collectGarbage(ctx)
				s.disableFailingWebhooks(ctx)
				s.abandonDisabledDeliveries(ctx)
			}
			wasLeader = leader
			if leader {
				s.publishSelf(ctx)
				s.forgetLostMembers(ctx)
				// A lease runs out when its node stops heartbeating, but while
				// no member led (an election, a restart) no heartbeat could be
				// renewed: a new leader gives the nodes one lease's length to
				// reach it before it expires what ran out meanwhile, or work
				// that live nodes still render would be taken from them.
				if time.Since(leaderSince) >= s.leaseGrace() {
					s.expireLeases(ctx)
				}
				s.handBackDrained(ctx)
				s.stopExport(ctx)
				s.startEventLog(ctx, level)
				s.sortableEventIDs(ctx, level)
				s.specsByReference(ctx, level)
				s.deriveCreatedEvents(ctx, level)
				s.startRouting(ctx, level)
				s.activeWebhookLimit(ctx, level)
				s.nextInLine(ctx, level)
			}
		}
	}
}

func (s *Server) expireIdempotency(ctx context.Context) {
	before := time.Now().Add(-time.Duration(fsm.IdempotencyTTL)).UnixNano()
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if n, err := fsm.Do(actx, s.Node, &fsm.ExpireIdempotency{Before: before}); err != nil {
		s.log.Warn("expire idempotency keys", "err", err)
	} else if n > 0 {
		s.log.Info("expired idempotency keys", "count", n)
	}
}

// leaseGrace is how long a new leader waits before it expires leases: one
// lease's length, in which a live node heartbeats at least twice.
func (s *Server) leaseGrace() time.Duration {
	if s.cfg.LeaseDuration > 0 {
		return s.cfg.LeaseDuration
	}
	return agentapi.DefaultLeaseDuration
}

// expireLeases requeues the tasks whose lease ran out (their node stopped
// heartbeating), makes ready the failed tasks whose retry time has come, and
// marks silent nodes down. It proposes only when the scheduler
// says there is something to expire, so an idle farm writes nothing to the log.
func (s *Server) expireLeases(ctx context.Context) {
	now := time.Now().UnixNano()
	if !s.Node.FSM.ExpiryDue(now) {
		return
	}
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	res, err := fsm.Do(actx, s.Node, &fsm.ExpireLeases{Now: now})
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("expire leases", "err", err)
		}
		return
	}
	for i, l := range res.Leases {
		o := res.Expired[i]
		s.log.Warn("lease expired", "node_id", l.NodeID, "task_id", l.TaskID, "video_id", l.VideoID,
			"requeued", o.Requeued, "video_failed", o.VideoFailed)
	}
	if len(res.NodesDown) > 0 {
		s.log.Warn("nodes stopped heartbeating", "node_ids", res.NodesDown)
	}
	if res.Retried > 0 {
		s.log.Info("failed tasks ready to be tried again", "count", res.Retried)
	}
	if len(res.Expired) > 0 || len(res.NodesDown) > 0 || res.Retried > 0 {
		s.notify.Notify()
	}
}
