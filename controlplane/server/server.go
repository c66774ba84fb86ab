// Package server assembles a control-plane node: the Raft node and its FSM, the
// public /v1 listener, the admin listener, the agent listener GPU nodes talk to,
// the blob store and the jobs that run only on the leader.
// cmd/vidfarm turns flags into a Config and calls Start.
package server

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/vidfarm/vidfarm/controlplane/admin"
	"github.com/vidfarm/vidfarm/controlplane/agentapi"
	"github.com/vidfarm/vidfarm/controlplane/api"
	"github.com/vidfarm/vidfarm/controlplane/appdb"
	"github.com/vidfarm/vidfarm/controlplane/blob"
	"github.com/vidfarm/vidfarm/controlplane/cluster"
	"github.com/vidfarm/vidfarm/controlplane/console"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/controlplane/raftnode"
	"github.com/vidfarm/vidfarm/controlplane/sealed"
	"github.com/vidfarm/vidfarm/controlplane/telemetry"
	"github.com/vidfarm/vidfarm/controlplane/webhook"
	"github.com/vidfarm/vidfarm/netguard"
)

// Config is everything a control-plane node is started with.
type Config struct {
	DataDir     string
	NodeID      string
	Listen      string // public API
	AdminListen string
	RaftListen  string
	AdminToken  string
	// ConsoleEventsHeartbeat is how often an idle live console page gets a
	// comment line (0: console.DefaultEventsHeartbeat, 15 s).
	ConsoleEventsHeartbeat time.Duration
	// ConsoleEventsInterval is how often a live console page is rebuilt
	// (0: console.DefaultEventsInterval, 1 s).
	ConsoleEventsInterval time.Duration
	// AgentListen is the agent listener (the agent protocol of scheduler/wire).
	// Empty means 127.0.0.1:0, an ephemeral loopback port (AgentAddr says which).
	AgentListen string
	// AgentToken lets nodes register. Empty means a token kept in the data
	// directory (agent.token), generated on first start.
	AgentToken string
	// BlobDir holds rendered files and task artifacts; default <data-dir>/blobs.
	BlobDir string
	// BlobS3, when set, keeps blobs in an S3-compatible bucket instead of BlobDir:
	// what a cluster of several nodes needs, so any leader serves every file.
	BlobS3 *blob.S3Config
	// LeaseDuration is how long a task lease lasts without a heartbeat (default
	// 30 s); HeartbeatInterval how often agents heartbeat (default 5 s).
	LeaseDuration     time.Duration
	HeartbeatInterval time.Duration
	// RetryBackoff is the base wait before a task that failed on every node
	// able to run it is tried again, doubling with each failure (at most 32
	// times); 0 means DefaultRetryBackoff, negative retries at once.
	RetryBackoff time.Duration
	// PublicURL is how clients reach the public listener; file URLs start with it.
	// Empty means http://<Listen's bound address>.
	PublicURL string
	AppURL    string
	// BlobSecret signs file URLs (hex). Empty means a secret kept in the data directory.
	BlobSecret string
	Limits     api.Limits
	Logger     *slog.Logger
	// NoSync turns fsync of the Raft log off; never in production.
	NoSync bool
	// AllowPrivateURLs accepts client URLs other than webhooks (video image
	// fields, logo and avatar photo URLs, brand pages) on private and loopback
	// hosts: a development switch for tests and closed networks.
	AllowPrivateURLs bool
	// BenchFill serves the admin's bench-only fill endpoint (fsm.BenchFill).
	BenchFill bool
	// SpeechWait bounds how long POST /v1/voices/speech waits for its audio
	// (0: api.DefaultSpeechWait).
	SpeechWait time.Duration
	// DevAllowPrivateWebhooks lets webhooks target plain http and private,
	// loopback and link-local addresses: the development switch for local
	// receivers. Start logs a loud warning when it is on; never on a public farm.
	DevAllowPrivateWebhooks bool
	// WebhookClock is the deliverer's clock; nil means the system clock. Tests
	// move a fake one through the retry schedule.
	WebhookClock webhook.Clock
	// WebhookSecretOverlap is how long a rotated webhook secret keeps signing
	// beside the new one (0: api.DefaultSecretOverlap, 24 h).
	WebhookSecretOverlap time.Duration
	// WebhookDisableAfter is how long an endpoint's attempts must have failed,
	// first failure to latest with no success between, before the leader
	// disables it (0: DefaultWebhookDisableAfter, 5 days); the leader looks
	// every WebhookDisableCheck (0: DefaultWebhookDisableCheck).
	WebhookDisableAfter time.Duration
	WebhookDisableCheck time.Duration
	// WebhookDisabledKeep is how long a disabled endpoint keeps the
	// deliveries waiting for it before the leader abandons them (0:
	// DefaultWebhookDisabledKeep, 7 days): an owner who enables it within
	// that time gets them sent; after it they are abandoned, listed and
	// retryable one by one until the prune drops them a week later.
	WebhookDisabledKeep time.Duration
	// WebhookResolver resolves webhook hosts, at registration and at every
	// connection; nil means the system resolver. Tests make names resolve to
	// what they need (a name that turns private after registration).
	WebhookResolver netguard.Resolver
	// ClientResolver resolves the other addresses fetched for clients (brand
	// pages, video image fields, logo and avatar photo URLs) when they are
	// checked; nil means the system resolver. Tests make their example hosts
	// resolve.
	ClientResolver netguard.Resolver
	// PendingAssetTTL is how long an asset may stay pending (created, never
	// completed) before the leader deletes it and its bytes; default 24 h.
	PendingAssetTTL time.Duration
	// SecretsKey (64 hexadecimal digits, the same on every node) seals
	// webhook signing secrets in the replicated state, so that snapshots,
	// backups and the Raft log do not hold them in the clear. Several keys
	// separated by commas: the first seals, all open, and the leader seals
	// again what the first did not. Empty keeps them plain (as before the
	// option existed).
	SecretsKey string
	// GarbageInterval is how often the leader deletes the intermediate
	// blobs of finished videos (0: DefaultGarbageInterval).
	GarbageInterval time.Duration
	// SpeechRetention is how long a finished speech sample (and its audio)
	// is kept after it was asked for (0: DefaultSpeechRetention).
	SpeechRetention time.Duration
	// EventsHeartbeat is how often a quiet event stream gets a comment
	// line (0: api.DefaultEventsHeartbeat).
	EventsHeartbeat time.Duration
	// UploadRetention is how long the bytes of a POST /v1/uploads upload
	// are kept (0: DefaultUploadRetention); UploadSweepInterval how often
	// each node looks for older ones (0: DefaultUploadSweepInterval).
	UploadRetention     time.Duration
	UploadSweepInterval time.Duration
	// AppDB is the service's app database (a postgres:// URL); empty runs alone.
	AppDB string
	// AppDBPoll is how often the bridge polls when not woken (default 250 ms).
	AppDBPoll time.Duration

	// Join is the admin URL of any member of an existing cluster; a node with a
	// new data directory asks it to be added as a voter instead of bootstrapping.
	Join string
	// RaftAdvertise is the Raft address other nodes dial; default RaftListen's.
	RaftAdvertise string
	// AdminURL and AgentURL are how other nodes reach this node's admin and agent
	// listeners when they forward to it; default http://<bound address>.
	AdminURL string
	AgentURL string
	// TLS names the certificate files; the zero value is plain http and TCP.
	TLS TLSConfig
	// RaftTiming is Raft's failure detection; the zero value is
	// raftnode.DefaultTiming, chosen for a busy machine.
	RaftTiming raftnode.Timing
	// RaftSnapshotThreshold and RaftTrailingLogs: new log entries that trigger
	// a snapshot (a checkpoint of the state file) and entries kept behind one;
	// 0 keeps raftnode's defaults (8192, 10240).
	RaftSnapshotThreshold uint64
	RaftTrailingLogs      uint64
	// HTTP bounds slow and greedy clients: per-route read and write deadlines
	// on every listener, connections per address on the public one.
	HTTP HTTPLimits
}

// Server is a running control-plane node.
type Server struct {
	cfg       Config
	tls       tlsSettings
	Node      *raftnode.Node
	API       *api.API
	Blobs     blob.Store
	public    *http.Server
	admin     *http.Server
	agent     *http.Server
	publicLn  net.Listener
	adminLn   net.Listener
	agentLn   net.Listener
	notify    *agentapi.Notifier
	webhooks  *webhook.Engine
	bridge    *appdb.Bridge
	secrets   *sealed.Key // seals webhook secrets; nil: kept plain
	log       *slog.Logger
	stop      context.CancelFunc
	wg        sync.WaitGroup
	closeOnce sync.Once
	// failed receives the error that ended this node's part in the
	// cluster (Failed).
	failed chan error
}

// Failed receives, once, the error that ended this node's part in the
// cluster: its Raft log refused a write (a full or failing disk), after
// which the node can only step down and be elected again until it is
// restarted. The process should stop (its supervisor restarts it; it comes
// back once the disk has room, with everything it acknowledged): `vidfarm
// server` exits 1 with the error.
func (s *Server) Failed() <-chan error { return s.failed }

// raftConfig is the Raft node of cfg: where its data is, who it is and how
// it keeps its log; Start adds what a running node needs (TLS, joining,
// what to do when the log fails), Recover uses it as it is.
func raftConfig(cfg Config) raftnode.Config {
	return raftnode.Config{
		DataDir: filepath.Join(cfg.DataDir, "raft"), NodeID: cfg.NodeID, RaftAddr: cfg.RaftListen,
		Advertise: cfg.RaftAdvertise, Logger: cfg.Logger, NoSync: cfg.NoSync, Timing: cfg.RaftTiming,
		SnapshotThreshold: cfg.RaftSnapshotThreshold, TrailingLogs: cfg.RaftTrailingLogs,
	}
}

// Start opens the node, waits until it can take writes and starts serving.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.AdminToken == "" {
		return nil, errors.New("an admin token is required (--admin-token or VIDFARM_ADMIN_TOKEN)")
	}
	if err := checkTokens(cfg); err != nil {
		return nil, err
	}
	if cfg.NodeID == "" {
		cfg.NodeID = "node1"
	}
	switch {
	case cfg.RetryBackoff == 0:
		cfg.RetryBackoff = DefaultRetryBackoff
	case cfg.RetryBackoff < 0:
		cfg.RetryBackoff = 0
	}
	if cfg.WebhookDisableAfter <= 0 {
		cfg.WebhookDisableAfter = DefaultWebhookDisableAfter
	}
	if cfg.WebhookDisableCheck <= 0 {
		cfg.WebhookDisableCheck = DefaultWebhookDisableCheck
	}
	if cfg.WebhookDisabledKeep <= 0 {
		cfg.WebhookDisabledKeep = DefaultWebhookDisabledKeep
	}
	if cfg.GarbageInterval <= 0 {
		cfg.GarbageInterval = DefaultGarbageInterval
	}
	if cfg.SpeechRetention <= 0 {
		cfg.SpeechRetention = DefaultSpeechRetention
	}
	if cfg.UploadRetention <= 0 {
		cfg.UploadRetention = DefaultUploadRetention
	}
	if cfg.UploadSweepInterval <= 0 {
		cfg.UploadSweepInterval = DefaultUploadSweepInterval
	}
	if cfg.PendingAssetTTL <= 0 {
		cfg.PendingAssetTTL = DefaultPendingAssetTTL
	}
	cfg.HTTP = cfg.HTTP.withDefaults()
	guards := newHTTPGuards(cfg)
	// Agents are told the heartbeat interval in whole seconds (at least 1), so a
	// lease must outlast two of those or healthy nodes would lose their leases.
	if cfg.LeaseDuration > 0 {
		beat := max(cfg.HeartbeatInterval, time.Second).Round(time.Second)
		if cfg.HeartbeatInterval == 0 {
			beat = 5 * time.Second
		}
		if cfg.LeaseDuration < 2*beat {
			return nil, fmt.Errorf("lease duration %s must be at least twice the heartbeat interval (%s as agents receive it)", cfg.LeaseDuration, beat)
		}
	}
	if err := checkPlainRaft(cfg.RaftListen, cfg.TLS, cfg.Logger); err != nil {
		return nil, err
	}
	if err := checkRaftAdvertise(cfg.RaftListen, cfg.RaftAdvertise); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	secret, err := blobSecret(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.Join != "" {
		// Each of these, left to the node, differs from the other members':
		// what one node made would not work through another after a failover.
		if cfg.BlobSecret == "" {
			cfg.Logger.Warn("joining a cluster without --blob-secret: file URLs signed by one node will not verify on the others; give every node the same secret")
		}
		if cfg.BlobS3 == nil {
			cfg.Logger.Warn("joining a cluster without --blob-s3-*: each node keeps its files on its own disk, where the others cannot read them; give every node the same bucket")
		}
		if cfg.AgentToken == "" {
			cfg.Logger.Warn("joining a cluster without --agent-token: this node generates its own, and an agent given another node's is refused here once this node leads; give every node the same token")
		}
	}
	if cfg.AgentToken, err = agentToken(cfg); err != nil {
		return nil, err
	}
	if cfg.BlobDir == "" {
		cfg.BlobDir = filepath.Join(cfg.DataDir, "blobs")
	}
	blobs, err := openBlobs(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if cfg.AgentListen == "" {
		cfg.AgentListen = "127.0.0.1:0"
	}
	tlsSet, err := loadTLS(cfg.TLS, cfg.Logger)
	if err != nil {
		return nil, err
	}
	publicLn, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", cfg.Listen, err)
	}
	adminLn, err := net.Listen("tcp", cfg.AdminListen)
	if err != nil {
		publicLn.Close()
		return nil, fmt.Errorf("admin listen on %s: %w", cfg.AdminListen, err)
	}
	agentLn, err := net.Listen("tcp", cfg.AgentListen)
	if err != nil {
		publicLn.Close()
		adminLn.Close()
		return nil, fmt.Errorf("agent listen on %s: %w", cfg.AgentListen, err)
	}
	if cfg.PublicURL == "" {
		cfg.PublicURL = tlsSet.scheme() + publicLn.Addr().String()
	}
	cfg.PublicURL = strings.TrimRight(cfg.PublicURL, "/")
	if cfg.AppURL == "" {
		cfg.AppURL = "https://app.vidfarm.example"
	}
	removeRestoreSpools(cfg.DataDir, cfg.Logger)
	f, err := fsm.Open(filepath.Join(cfg.DataDir, "state.db"))
	if err == nil {
		err = checkLevel(f)
		if err != nil {
			f.Close()
		}
	}
	if err != nil {
		publicLn.Close()
		adminLn.Close()
		agentLn.Close()
		return nil, err
	}
	publicLn = guards.limitConns(publicLn, cfg.NodeID, f.Members)
	// The engine exists before the node replays its log, so events written by the
	// replay wake it; it reaches the API and the node through s once they exist.
	var s *Server
	reg := prometheus.NewRegistry()
	f.SetObserver(fsmObserver(reg))
	// Before the node opens: until then Raft's measurements go nowhere.
	reg.MustRegister(raftMetrics())
	// Staging starts halfway through a snapshot interval (fsm/stage.go).
	f.SetStageAfter(max(cmp.Or(cfg.RaftSnapshotThreshold, raftnode.DefaultSnapshotThreshold)/2, 1))
	secrets, err := secretsKey(cfg)
	if err != nil {
		f.Close()
		publicLn.Close()
		adminLn.Close()
		agentLn.Close()
		return nil, err
	}
	engine, guard := newWebhooks(cfg, f, reg, &s, secrets)
	failed := make(chan error, 1)
	rc := raftConfig(cfg)
	rc.TLS, rc.Join = tlsSet.raft, cfg.Join != ""
	rc.OnLogFailure = func(err error) {
		cfg.Logger.Error("the raft log cannot be written: this node stops, to be started again once its disk has room", "data_dir", cfg.DataDir, "err", err)
		failed <- err
	}
	node, err := raftnode.Open(rc, f)
	if err != nil {
		f.Close()
		publicLn.Close()
		adminLn.Close()
		agentLn.Close()
		return nil, err
	}
	s = &Server{cfg: cfg, tls: tlsSet, Node: node, Blobs: blobs, publicLn: publicLn, adminLn: adminLn, agentLn: agentLn,
		notify: agentapi.NewNotifier(), webhooks: engine, log: cfg.Logger, secrets: secrets, failed: failed}
	engine.SetStore(node)
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), newStateCollector(f, node), newWALCollector(node), anonCollector{}, guards,
		&farmCollector{f: f, dataDir: cfg.DataDir, now: time.Now, log: cfg.Logger}, maintenanceCollector{f})
	if err := s.openBridge(f, reg); err != nil {
		node.Close()
		publicLn.Close()
		adminLn.Close()
		agentLn.Close()
		return nil, err
	}
	s.API, err = api.New(api.Config{
		FSM: f, Store: node, Logger: cfg.Logger, Signer: blob.Signer{Key: secret, BaseURL: cfg.PublicURL},
		Limits: cfg.Limits, AppURL: cfg.AppURL, Registry: reg, Blobs: blobs, WorkQueued: s.notify.Notify,
		AllowPrivateURLs: cfg.AllowPrivateURLs, SpeechWait: cfg.SpeechWait, WebhookGuard: guard, Secrets: secrets,
		SecretOverlap: cfg.WebhookSecretOverlap, EventsHeartbeat: cfg.EventsHeartbeat, ReadBarrier: s.readBarrier,
		Guard: &netguard.Guard{AllowPrivate: cfg.AllowPrivateURLs, Resolver: cfg.ClientResolver},
	})
	if cfg.AllowPrivateURLs {
		cfg.Logger.Warn("DEVELOPMENT SWITCH: input image URLs on private and loopback hosts are accepted; never use this on a public farm")
	}
	if err != nil {
		node.Close()
		publicLn.Close()
		adminLn.Close()
		agentLn.Close()
		return nil, err
	}
	if cfg.AdminURL == "" {
		cfg.AdminURL = tlsSet.scheme() + adminLn.Addr().String()
	}
	if cfg.AgentURL == "" {
		cfg.AgentURL = tlsSet.scheme() + agentLn.Addr().String()
	}
	s.cfg = cfg
	var forwarders []*cluster.Forwarder // told of each leader change (startBackground)
	forward := func(l cluster.Listener, h http.Handler, local func(*http.Request) bool, refused func(*http.Request, int, time.Duration)) http.Handler {
		fw := cluster.NewForwarder(node, f, l, cfg.Logger, local, tlsSet.client)
		fw.Refused = refused
		forwarders = append(forwarders, fw)
		return fw.Wrap(h)
	}
	// A follower streams a video's events from its own state (after a read
	// barrier) and forwards every other public request; what it refuses
	// (no leader) counts in the API's request metrics, as the admin and
	// agent listeners' refusals count in theirs.
	s.public = guards.server(guards.public, forward(cluster.Public, s.API, api.EventsPath, s.API.ObserveRefused))
	s.public.RegisterOnShutdown(s.API.StopStreams)
	// GPU telemetry from heartbeats: this member's memory, not Raft (see
	// package telemetry); agent requests reach the leader, so it is the
	// leader's that fills.
	beat := cfg.HeartbeatInterval
	if beat <= 0 {
		beat = agentapi.DefaultHeartbeatInterval
	}
	tel := telemetry.New(telemetry.ForHeartbeats(beat))
	reg.MustRegister(tel.Collector())
	adminAPI := forward(cluster.Admin, admin.Handler(admin.Config{Token: cfg.AdminToken, FSM: f, Node: node, Logger: cfg.Logger, Gatherer: reg, Registerer: reg, Cluster: node,
		AppDB: s.bridgeStatus(), BenchFill: cfg.BenchFill, Telemetry: tel,
		DataDir: cfg.DataDir, Secrets: secrets, PeerTLS: tlsSet.client}), adminLocal, admin.ObserveRefused(reg))
	con := console.New(console.Config{Token: cfg.AdminToken, Admin: adminAPI, EventsHeartbeat: cfg.ConsoleEventsHeartbeat, EventsInterval: cfg.ConsoleEventsInterval, RateLimitHits: s.API.RateLimitHits,
		MemberTLS: tlsSet.client, FSM: f, Secure: tlsSet.server != nil, Logger: cfg.Logger, Registerer: reg, Telemetry: tel})
	s.admin = guards.server(guards.admin, withConsole(adminAPI, con))
	s.admin.RegisterOnShutdown(con.StopStreams) // the console's live pages never go idle by themselves
	bg, stop := context.WithCancel(context.Background())
	s.stop = stop
	// Lease polls wait up to a minute and artifact uploads are as long as the
	// video: the guard's deadlines count neither the wait nor more than the
	// transfer budget. Its requests live in bg, so closing the server ends
	// waiting polls at once instead of holding the shutdown.
	s.agent = guards.server(guards.agent, forward(cluster.Agent, agentapi.Handler(agentapi.Config{
		FSM: f, Store: node, Blobs: blobs, Token: cfg.AgentToken, Notifier: s.notify, Logger: cfg.Logger,
		LeaseDuration: cfg.LeaseDuration, HeartbeatInterval: cfg.HeartbeatInterval, RetryBackoff: cfg.RetryBackoff,
		Telemetry: tel, Registerer: reg,
	}), nil, agentapi.ObserveRefused(reg)))
	s.agent.BaseContext = func(net.Listener) context.Context { return bg }
	// Forwards to a leader that stops answering end when the others elect
	// another (cluster.Forwarder.LeaderIs), not at their callers' timeouts.
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		said := false // the removal is logged once
		node.WatchLeader(bg, func(id string) {
			for _, fw := range forwarders {
				fw.LeaderIs(id)
			}
			if id != "" || said {
				return
			}
			if others, removed := node.Removed(); removed {
				said = true
				cfg.Logger.Error("this node was removed from the cluster and will have no leader again: it answers every request that needs one with 503; stop it, or empty its data directory and start it with --join to add it anew",
					"node_id", node.ID(), "members", others)
			}
		})
	}()
	if err := s.joinOrWait(ctx); err != nil {
		s.Close(context.Background())
		return nil, err
	}
	s.wg.Add(3)
	go func() {
		defer s.wg.Done()
		s.leaderJobs(bg)
	}()
	go func() {
		defer s.wg.Done()
		s.reportSelf(bg)
	}()
	go func() {
		defer s.wg.Done()
		s.webhooks.Run(bg)
	}()
	s.runBridge(bg)
	s.log.Info("control plane ready", "node_id", cfg.NodeID, "public", publicLn.Addr().String(),
		"admin", adminLn.Addr().String(), "agent", agentLn.Addr().String(), "raft", node.RaftAddr(),
		"data_dir", cfg.DataDir, "blob_dir", cfg.BlobDir, "tls", tlsSet.server != nil, "raft_mutual_tls", tlsSet.raft != nil,
		"understands", uint8(fsm.Understood()))
	return s, nil
}

// joinOrWait brings the node to where it can serve. A new node joining a
// cluster serves at once (forwarding to the leader), asks to be added and waits
// until it has caught up; any other node waits for a leader and its log first,
// so that it never answers from a state behind acknowledged writes.
func (s *Server) joinOrWait(ctx context.Context) error {
	if s.cfg.Join == "" || s.Node.HadState() {
		if err := s.Node.WaitReady(ctx); err != nil {
			return err
		}
		s.serveAll()
		return s.promoteIfNonvoter(ctx)
	}
	s.serveAll()
	// Two steps: first receive the log (and, far behind, the snapshot) without
	// counting for a majority; then, caught up, become a voter.
	req := joinRequest(s.self())
	req.Stage = cluster.StageNonvoter
	if err := cluster.Join(ctx, s.cfg.Join, s.cfg.AdminToken, req, s.tls.client, s.log); err != nil {
		return err
	}
	// The join is acknowledged once committed on the leader; wait until this
	// node's own log has caught up to it too (far behind, the snapshot comes
	// first: minutes at millions of videos), saying so every ten seconds.
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	began, told := time.Now(), time.Now()
	for {
		if _, ok := s.Node.FSM.Member(s.cfg.NodeID); ok {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for this node's membership to replicate (still catching up after %s; a node joining a large state may need a longer --start-timeout): %w",
				time.Since(began).Round(time.Second), ctx.Err())
		case <-t.C:
		}
		if time.Since(told) >= 10*time.Second {
			told = time.Now()
			st := s.Node.Stats()
			s.log.Info("catching up with the cluster", "applied_index", st["applied_index"], "commit_index", st["commit_index"],
				"last_snapshot_index", st["last_snapshot_index"], "waited", time.Since(began).Round(time.Second).String())
		}
	}
	if err := s.Node.WaitReady(ctx); err != nil {
		return err
	}
	req.Stage = cluster.StageVoter
	return cluster.Join(ctx, s.cfg.Join, s.cfg.AdminToken, req, s.tls.client, s.log)
}

// promoteIfNonvoter finishes a staged join that a restart interrupted: a
// node still a nonvoter asks again to become a voter.
func (s *Server) promoteIfNonvoter(ctx context.Context) error {
	if s.cfg.Join == "" {
		return nil
	}
	servers, err := s.Node.Servers()
	if err != nil {
		return err
	}
	for _, sv := range servers {
		if sv.ID == s.cfg.NodeID && sv.Suffrage == raft.Nonvoter.String() {
			req := joinRequest(s.self())
			req.Stage = cluster.StageVoter
			return cluster.Join(ctx, s.cfg.Join, s.cfg.AdminToken, req, s.tls.client, s.log)
		}
	}
	return nil
}

func (s *Server) serveAll() {
	s.serve(s.public, s.publicLn, "public")
	s.serve(s.admin, s.adminLn, "admin")
	s.serve(s.agent, s.agentLn, "agent")
}

// adminLocal are the admin requests a follower answers itself: its own metrics,
// profiles and view of the cluster.
func adminLocal(r *http.Request) bool {
	if r.Method != http.MethodGet {
		return false
	}
	if strings.HasPrefix(r.URL.Path, "/debug/") {
		return true
	}
	switch r.URL.Path {
	case "/metrics", "/admin/v1/status", "/admin/v1/cluster/members", "/admin/v1/cluster/status":
		return true
	}
	return false
}

// withConsole serves the operator's console (/console) on the admin
// listener beside the admin API. The console is never forwarded: its
// sessions live on the node that made them, and it reaches the leader
// through the admin API's own forwarding.
func withConsole(adminAPI, con http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if console.Handled(r) {
			con.ServeHTTP(w, r)
			return
		}
		adminAPI.ServeHTTP(w, r)
	})
}

func (s *Server) serve(srv *http.Server, ln net.Listener, name string) {
	s.tls.prepare(srv, name, s.log)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := serveOn(srv, ln); err != nil {
			s.log.Error("listener stopped", "listener", name, "err", err)
		}
	}()
}

// PublicAddr is the bound address of the public API.
func (s *Server) PublicAddr() string { return s.publicLn.Addr().String() }

// AdminAddr is the bound address of the admin API.
func (s *Server) AdminAddr() string { return s.adminLn.Addr().String() }

// AgentAddr is the bound address of the agent listener.
func (s *Server) AgentAddr() string { return s.agentLn.Addr().String() }

// AgentToken is the token nodes register with.
func (s *Server) AgentToken() string { return s.cfg.AgentToken }

// NotifyWork wakes agents waiting for a lease: call it after anything that may
// have made work placeable outside the agent and public APIs.
func (s *Server) NotifyWork() { s.notify.Notify() }

// PublicURL is the base URL clients use.
func (s *Server) PublicURL() string { return s.cfg.PublicURL }

// AdminURL is how other nodes reach the admin listener (https with TLS).
func (s *Server) AdminURL() string { return s.cfg.AdminURL }

// Close drains the listeners and shuts the node down.
func (s *Server) Close(ctx context.Context) error {
	var err error
	s.closeOnce.Do(func() {
		if s.stop != nil {
			s.stop()
		}
		_ = s.public.Shutdown(ctx)
		_ = s.admin.Shutdown(ctx)
		_ = s.agent.Shutdown(ctx)
		s.wg.Wait()
		s.API.Close()
		err = s.Node.Close()
	})
	return err
}

func openBlobs(ctx context.Context, cfg Config) (blob.Store, error) {
	if cfg.BlobS3 != nil {
		s, err := blob.NewS3Store(ctx, *cfg.BlobS3)
		if err != nil {
			return nil, err
		}
		cfg.Logger.Info("blobs in S3", "endpoint", cfg.BlobS3.Endpoint, "bucket", cfg.BlobS3.Bucket, "prefix", cfg.BlobS3.Prefix)
		return s, nil
	}
	return blob.NewLocalStore(cfg.BlobDir)
}

// blobSecret returns the key that signs file URLs: the configured one, or one kept
// in the data directory so URLs survive restarts.
func blobSecret(cfg Config) ([]byte, error) {
	if cfg.BlobSecret != "" {
		b, err := hex.DecodeString(cfg.BlobSecret)
		if err != nil || len(b) < 16 {
			return nil, errors.New("blob secret must be at least 32 hex digits")
		}
		return b, nil
	}
	p := filepath.Join(cfg.DataDir, "blob.key")
	if b, err := os.ReadFile(p); err == nil {
		return hex.DecodeString(strings.TrimSpace(string(b)))
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("read blob key: %w", err)
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	if err := os.WriteFile(p, []byte(hex.EncodeToString(b)), 0o600); err != nil {
		return nil, fmt.Errorf("write blob key: %w", err)
	}
	return b, nil
}

// agentToken returns the token nodes register with: the configured one, or one
// kept in the data directory (agent.token), generated on first start.
func agentToken(cfg Config) (string, error) {
	if cfg.AgentToken != "" {
		return cfg.AgentToken, nil
	}
	p := filepath.Join(cfg.DataDir, "agent.token")
	if b, err := os.ReadFile(p); err == nil {
		if tok := strings.TrimSpace(string(b)); tok != "" {
			return tok, nil
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("read agent token: %w", err)
	}
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	tok := "vfagent_" + hex.EncodeToString(b)
	if err := os.WriteFile(p, []byte(tok+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write agent token: %w", err)
	}
	cfg.Logger.Info("generated the agent registration token; give it to agents with --agent-token", "path", p)
	return tok, nil
}
