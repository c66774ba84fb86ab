package server

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vidfarm/vidfarm/controlplane/ids"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/controlplane/sealed"
	"github.com/vidfarm/vidfarm/controlplane/webhook"
	"github.com/vidfarm/vidfarm/netguard"
)

// newWebhooks builds the address guard webhooks go through (registration and
// delivery) and the deliverer, wired to f so new events wake it. srv is read
// only when the deliverer runs, after Start has filled it in.
func newWebhooks(cfg Config, f *fsm.FSM, reg prometheus.Registerer, srv **Server, secrets *sealed.Key) (*webhook.Engine, *netguard.Guard) {
	guard := &netguard.Guard{AllowPrivate: cfg.DevAllowPrivateWebhooks, Resolver: cfg.WebhookResolver}
	if cfg.DevAllowPrivateWebhooks {
		cfg.Logger.Warn("DEVELOPMENT SWITCH --dev-allow-private-webhooks IS ON: webhooks may target plain http and private, loopback and link-local addresses, so any API client can make this server send requests into its own network; never use this on a public farm")
	}
	engine := webhook.New(webhook.Config{
		State: f, Client: guard.Client(webhook.DefaultTimeout, false), Clock: cfg.WebhookClock, Logger: cfg.Logger,
		Render:        func(v fsm.Video, exp time.Time) any { return (*srv).API.EventVideo(v, exp) },
		RenderWebhook: func(w fsm.Webhook) any { return (*srv).API.WebhookObject(w) },
		IsLeader:      func() bool { return (*srv).Node.IsLeader() }, Metrics: webhook.NewMetrics(reg, f), Secrets: secrets,
	})
	f.OnOutbox(engine.Notify)
	return engine, guard
}

// secretsKey parses Config.SecretsKey; without one, webhook secrets stay
// plain and the log says so.
func secretsKey(cfg Config) (*sealed.Key, error) {
	if cfg.SecretsKey == "" {
		cfg.Logger.Info("no --secrets-key: new webhook signing secrets are kept in plain text in the replicated state (snapshots, backups); set the same key on every node to seal them")
		return nil, nil
	}
	k, err := sealed.ParseKey(cfg.SecretsKey)
	if err != nil {
		return nil, fmt.Errorf("--secrets-key: %w", err)
	}
	return k, nil
}

// resealSecrets seals again the webhook secrets that the current secrets
// key did not seal (plain ones, or sealed by a key now listed after it),
// so an operator can set a key on a running farm or retire an old one.
// One command per webhook, carrying the value it replaces: a webhook
// deleted or re-sealed in the meantime is left alone.
func (s *Server) resealSecrets(ctx context.Context) {
	if s.secrets == nil {
		return
	}
	done := 0
	for _, st := range s.Node.FSM.StoredSecrets() {
		plain, current, err := s.secrets.OpenCurrent(st.Secret, st.WebhookID)
		if err != nil {
			s.log.Warn("a webhook's signing secret does not open with any secrets key", "webhook_id", st.WebhookID, "err", err)
			continue
		}
		if current {
			continue
		}
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err = s.Node.Apply(actx, &fsm.ResealWebhook{WebhookID: st.WebhookID, Old: st.Secret,
			New: s.secrets.Seal(plain, st.WebhookID), Now: time.Now().UnixNano()})
		cancel()
		if err != nil {
			if ctx.Err() == nil && !s.gated("reseal_secrets", err) {
				s.log.Warn("reseal a webhook's signing secret", "webhook_id", st.WebhookID, "err", err)
			}
			return
		}
		done++
	}
	if done > 0 {
		s.log.Info("sealed webhook signing secrets with the current secrets key", "count", done)
	}
}

// Defaults of Config.WebhookDisableAfter, WebhookDisableCheck and
// WebhookDisabledKeep.
const (
	DefaultWebhookDisableAfter = 5 * 24 * time.Hour
	DefaultWebhookDisableCheck = time.Minute
	DefaultWebhookDisabledKeep = 7 * 24 * time.Hour
)

// disableFailingWebhooks disables the endpoints whose every attempt failed
// for WebhookDisableAfter (leader job). Each command carries the run of
// failures the leader saw, so a success recorded meanwhile makes it a no-op.
func (s *Server) disableFailingWebhooks(ctx context.Context) {
	after := s.cfg.WebhookDisableAfter
	for _, w := range s.Node.FSM.FailingWebhooks(int64(after)) {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		done, err := fsm.Do(actx, s.Node, &fsm.DisableWebhook{WebhookID: w.ID, FailingSince: w.FailingSince,
			MinFailing: int64(after), EventID: ids.New("evt"), Now: s.webhookNow().UnixNano()})
		cancel()
		if err != nil {
			if ctx.Err() == nil && !s.gated("disable_failing_webhooks", err) {
				s.log.Warn("disable a failing webhook endpoint", "webhook_id", w.ID, "err", err)
			}
			return
		}
		if done {
			s.log.Warn("webhook endpoint disabled: every attempt failed", "webhook_id", w.ID, "account_id", w.AccountID,
				"failing_since", time.Unix(0, w.FailingSince).UTC(), "last_failed_at", time.Unix(0, w.LastFailedAt).UTC(), "threshold", after)
		}
	}
}

// abandonDisabledDeliveries abandons the deliveries still waiting for
// endpoints disabled for WebhookDisabledKeep (leader job): pending
// deliveries live in every member's memory, and a disabled endpoint's would
// stay there for as long as the endpoint exists.
func (s *Server) abandonDisabledDeliveries(ctx context.Context) {
	now := s.webhookNow()
	before := now.Add(-s.cfg.WebhookDisabledKeep).UnixNano()
	for _, w := range s.Node.FSM.DisabledWaiting(before) {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		n, err := fsm.Do(actx, s.Node, &fsm.AbandonDisabled{WebhookID: w.ID, DisabledAt: w.DisabledAt, Before: before, Now: now.UnixNano()})
		cancel()
		if err != nil {
			if ctx.Err() == nil && !s.gated("abandon_disabled_deliveries", err) {
				s.log.Warn("abandon a disabled webhook endpoint's waiting deliveries", "webhook_id", w.ID, "err", err)
			}
			return
		}
		if n > 0 {
			s.log.Info("abandoned the deliveries waiting for a webhook endpoint disabled too long", "webhook_id", w.ID,
				"account_id", w.AccountID, "deliveries", n, "disabled_at", time.Unix(0, w.DisabledAt).UTC(), "keep", s.cfg.WebhookDisabledKeep)
		}
	}
}

// webhookNow is the deliverer's clock: the times of attempts, and so of a
// run of failures, are read on it.
func (s *Server) webhookNow() time.Time {
	if s.cfg.WebhookClock != nil {
		return s.cfg.WebhookClock.Now()
	}
	return time.Now()
}
