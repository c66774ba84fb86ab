package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/api"
	"github.com/vidfarm/vidfarm/controlplane/blob"
	"github.com/vidfarm/vidfarm/controlplane/raftnode"
	"github.com/vidfarm/vidfarm/controlplane/server"
)

type serverFlags struct {
	cfg        server.Config
	logLevel   string
	rateLimits bool
	s3         blob.S3Config
	connExempt string
	// startTimeout bounds the wait for a leader and the log (and, joining,
	// for the catch-up) before the node serves.
	startTimeout time.Duration
}

func bindServerFlags(fs *flag.FlagSet, sf *serverFlags, dataDir string) {
	fs.StringVar(&sf.cfg.DataDir, "data-dir", dataDir, "directory for the Raft log, snapshots and keys")
	fs.StringVar(&sf.cfg.Listen, "listen", "127.0.0.1:8080", "public API listen address")
	fs.StringVar(&sf.cfg.AdminListen, "admin-listen", "127.0.0.1:8081", "admin API, operator console (/console) and metrics listen address")
	fs.StringVar(&sf.cfg.RaftListen, "raft-listen", "127.0.0.1:7000", "Raft listen address")
	fs.StringVar(&sf.cfg.NodeID, "node-id", "node1", "this node's Raft id")
	fs.StringVar(&sf.cfg.AdminToken, "admin-token", "", "token guarding the admin API")
	fs.StringVar(&sf.cfg.PublicURL, "public-url", "", "base URL clients use (default http://<listen>, https:// with --tls-cert)")
	fs.StringVar(&sf.cfg.AppURL, "app-url", "https://app.vidfarm.example", "the service's app, where credits and plans are bought")
	fs.StringVar(&sf.cfg.BlobSecret, "blob-secret", "", "hex key signing file URLs (default: generated into the data dir)")
	fs.StringVar(&sf.cfg.AgentListen, "agent-listen", "127.0.0.1:8082", "agent listener address (GPU nodes register and lease work here)")
	fs.StringVar(&sf.cfg.AgentToken, "agent-token", "", "token agents register with (default: generated into <data-dir>/agent.token)")
	fs.StringVar(&sf.cfg.BlobDir, "blob-dir", "", "directory for rendered files and task artifacts (default <data-dir>/blobs)")
	fs.DurationVar(&sf.cfg.LeaseDuration, "lease-duration", 30*time.Second, "how long a task lease lasts without an agent heartbeat")
	fs.DurationVar(&sf.cfg.RetryBackoff, "retry-backoff", server.DefaultRetryBackoff, "wait before retrying a task that failed on every node able to run it; doubles per failure, at most 32x (negative: retry at once)")
	fs.DurationVar(&sf.cfg.HeartbeatInterval, "heartbeat-interval", 5*time.Second, "how often agents are told to heartbeat")
	fs.StringVar(&sf.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.BoolVar(&sf.rateLimits, "rate-limits", true, "enforce the contract's rate limits (turn off only for benchmarks)")
	fs.StringVar(&sf.cfg.Join, "join", "", "admin URL of any member of an existing cluster to join (new data directory only)")
	fs.StringVar(&sf.cfg.RaftAdvertise, "raft-advertise", "", "Raft address other nodes dial (default: the bound --raft-listen address)")
	fs.StringVar(&sf.cfg.AdminURL, "admin-url", "", "admin URL other nodes forward to (default http(s)://<admin-listen>)")
	fs.StringVar(&sf.cfg.AgentURL, "agent-url", "", "agent URL other nodes forward to (default http(s)://<agent-listen>)")
	fs.StringVar(&sf.s3.Endpoint, "blob-s3-endpoint", "", "S3-compatible endpoint host[:port] for blobs (instead of --blob-dir; needed with several nodes)")
	fs.StringVar(&sf.s3.Bucket, "blob-s3-bucket", "", "S3 bucket for blobs (must exist)")
	fs.StringVar(&sf.s3.Region, "blob-s3-region", "us-east-1", "S3 region")
	fs.StringVar(&sf.s3.Prefix, "blob-s3-prefix", "", "key prefix inside the bucket (several farms can share one)")
	fs.StringVar(&sf.s3.AccessKey, "blob-s3-access-key", "", "S3 access key (better: VIDFARM_BLOB_S3_ACCESS_KEY)")
	fs.StringVar(&sf.s3.SecretKey, "blob-s3-secret-key", "", "S3 secret key (better: VIDFARM_BLOB_S3_SECRET_KEY)")
	fs.BoolVar(&sf.s3.Insecure, "blob-s3-insecure", false, "talk plain http to the S3 endpoint (private networks and tests only)")
	fs.BoolVar(&sf.cfg.AllowPrivateURLs, "allow-private-urls", false, "DEVELOPMENT: accept input image URLs on private and loopback hosts")
	fs.BoolVar(&sf.cfg.BenchFill, "bench-fill", false, "BENCHMARKS ONLY: serve POST /admin/v1/bench/fill, which adds completed videos to an account without rendering them")
	fs.DurationVar(&sf.cfg.SpeechWait, "speech-wait", api.DefaultSpeechWait, "how long POST /v1/voices/speech waits for its audio before answering 202 with a sample to poll")
	fs.DurationVar(&sf.cfg.EventsHeartbeat, "events-heartbeat", api.DefaultEventsHeartbeat, "how often a quiet GET /v1/videos/{id}/events stream gets a comment line (proxies close silent connections)")
	fs.StringVar(&sf.cfg.SecretsKey, "secrets-key", "", "64 hex digits, the same on every node (e.g. openssl rand -hex 32): seal webhook signing secrets in the replicated state, snapshots and backups; NEW,OLD rotates (the leader seals again with NEW)")
	fs.DurationVar(&sf.cfg.SpeechRetention, "speech-retention", server.DefaultSpeechRetention, "how long a finished speech sample (POST /v1/voices/speech) and its audio are kept")
	fs.DurationVar(&sf.cfg.UploadRetention, "upload-retention", server.DefaultUploadRetention, "how long the bytes of POST /v1/uploads are kept (their public URLs are valid for 7 days)")
	fs.BoolVar(&sf.cfg.DevAllowPrivateWebhooks, "dev-allow-private-webhooks", false,
		"DEVELOPMENT: let webhooks target plain http and loopback/private addresses (local receivers); never on a public farm")
	fs.StringVar(&sf.cfg.TLS.CertFile, "tls-cert", "", "PEM certificate (with chain) for the public, admin and agent listeners; with --tls-key they speak only https")
	fs.StringVar(&sf.cfg.TLS.KeyFile, "tls-key", "", "PEM private key of --tls-cert")
	fs.StringVar(&sf.cfg.TLS.CAFile, "tls-ca", "", "PEM CA bundle trusted when this node calls other nodes' https listeners (forwarding, join); default: the system's CAs")
	fs.StringVar(&sf.cfg.TLS.RaftCertFile, "raft-tls-cert", "", "PEM certificate for Raft mutual TLS (with --raft-tls-key and --raft-tls-ca; valid for the Raft address peers dial)")
	fs.StringVar(&sf.cfg.TLS.RaftKeyFile, "raft-tls-key", "", "PEM private key of --raft-tls-cert")
	fs.StringVar(&sf.cfg.TLS.RaftCAFile, "raft-tls-ca", "", "PEM CA that signs every Raft peer's certificate; peers without one are refused")
	fs.BoolVar(&sf.cfg.TLS.RaftInsecure, "raft-insecure", false, "let Raft run plain TCP on a --raft-listen other machines can reach (not loopback): only on a network the control-plane nodes alone can reach, as anything reaching the port can write the state; without it such a node needs --raft-tls-*")
	fs.DurationVar(&sf.cfg.RaftTiming.Heartbeat, "raft-heartbeat-timeout", raftnode.DefaultTiming.Heartbeat, "how long a follower hears nothing from the leader (randomised up to twice this) before it asks for an election")
	fs.DurationVar(&sf.cfg.RaftTiming.Election, "raft-election-timeout", raftnode.DefaultTiming.Election, "how long a candidate waits for votes (randomised up to twice this) before it tries again")
	fs.DurationVar(&sf.cfg.RaftTiming.LeaderLease, "raft-leader-lease", raftnode.DefaultTiming.LeaderLease, "how long a leader that cannot reach a majority keeps leading; at most --raft-heartbeat-timeout")
	fs.DurationVar(&sf.startTimeout, "start-timeout", time.Minute, "how long a starting node waits for a leader and to catch up with the log before it gives up; a node joining a state of millions of videos needs minutes")
	fs.Uint64Var(&sf.cfg.RaftSnapshotThreshold, "raft-snapshot-threshold", 8192, "new log entries that trigger a snapshot: a checkpoint of the state file")
	fs.Uint64Var(&sf.cfg.RaftTrailingLogs, "raft-trailing-logs", 10240, "log entries kept behind a snapshot; a follower further behind is sent the snapshot")
	fs.StringVar(&sf.cfg.AppDB, "app-db", "", "the service's app database, postgres://… (add ?search_path=SCHEMA for another schema); empty runs alone")
	bindHTTPLimitFlags(fs, sf)
}

// bindHTTPLimitFlags binds the deadlines of the listeners and the public
// listener's connection limit (server.HTTPLimits).
func bindHTTPLimitFlags(fs *flag.FlagSet, sf *serverFlags) {
	l := &sf.cfg.HTTP
	fs.DurationVar(&l.HeaderTimeout, "http-header-timeout", server.DefaultHeaderTimeout, "every listener: how long a client may take to send a request's headers (and its TLS handshake)")
	fs.DurationVar(&l.BodyTimeout, "http-body-timeout", server.DefaultBodyTimeout, "every listener: how long an ordinary (JSON) request body may take to arrive; slower ones get 408 request_timeout and the connection is closed")
	fs.DurationVar(&l.WriteTimeout, "http-write-timeout", server.DefaultWriteTimeout, "every listener: how long an ordinary answer may take to send, from its first byte")
	fs.DurationVar(&l.UploadTimeout, "http-upload-timeout", server.DefaultUploadTimeout, "public listener: how long the bytes PUT to an upload_url (at most 20 MiB) may take to arrive")
	fs.DurationVar(&l.TransferTimeout, "http-transfer-timeout", server.DefaultTransferTimeout, "how long a large stream may take: file downloads (GET /files/), agents' artifact uploads and downloads, admin backup and restore")
	fs.IntVar(&l.MaxConnsPerIP, "max-conns-per-ip", server.DefaultMaxConnsPerIP, "public listener: connections one client address (IPv6: its /64) may hold open; more are closed at once (0: no limit; behind a proxy every client has the proxy's address: exempt it with --conn-limit-exempt)")
	fs.StringVar(&sf.connExempt, "conn-limit-exempt", "127.0.0.0/8,::1/128", "comma-separated addresses or CIDR prefixes --max-conns-per-ip does not apply to: your reverse proxies and load balancers (empty: none; the cluster's other nodes are always exempt)")
}

// httpLimits turns the flags' conventions (0: no limit, a list as text) into
// server.HTTPLimits's.
func (sf *serverFlags) httpLimits() (server.HTTPLimits, error) {
	l := sf.cfg.HTTP
	if l.MaxConnsPerIP == 0 {
		l.MaxConnsPerIP = -1
	}
	l.ConnLimitExempt = []netip.Prefix{} // not nil: exactly the list given
	for _, f := range strings.Split(sf.connExempt, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			a, aerr := netip.ParseAddr(f)
			if aerr != nil {
				return l, fmt.Errorf("--conn-limit-exempt: %q is neither an address nor a CIDR prefix", f)
			}
			p = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
		}
		l.ConnLimitExempt = append(l.ConnLimitExempt, p.Masked())
	}
	return l, nil
}

func (sf *serverFlags) config() (server.Config, error) {
	log, err := newLogger(sf.logLevel)
	if err != nil {
		return server.Config{}, err
	}
	cfg := sf.cfg
	cfg.Logger = log
	if cfg.HTTP, err = sf.httpLimits(); err != nil {
		return server.Config{}, err
	}
	if sf.s3.Endpoint != "" || sf.s3.Bucket != "" {
		s3 := sf.s3
		cfg.BlobS3 = &s3
	}
	cfg.Limits = api.ContractLimits()
	if !sf.rateLimits {
		cfg.Limits.Disabled = true
		log.Warn("rate limits are OFF: every client may send without limit; use this only for benchmarks")
	}
	return cfg, nil
}

func runServer(args []string) error {
	fs := flag.NewFlagSet("server", flag.ExitOnError)
	var sf serverFlags
	bindServerFlags(fs, &sf, "./data/server")
	recoverFlag := fs.Bool("recover-cluster", false, "after the cluster lost its quorum for good (most voters gone with their disks): make this stopped node the one voter of a new cluster, keeping all its data, then exit; start it again without this flag and join new nodes to it (docs/cluster.md, \"Losing the quorum\")")
	if err := parse(fs, args); err != nil {
		return err
	}
	cfg, err := sf.config()
	if err != nil {
		return err
	}
	if *recoverFlag {
		return recoverCluster(os.Stdout, cfg)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	startCtx, cancel := context.WithTimeout(ctx, sf.startTimeout)
	defer cancel()
	s, err := server.Start(startCtx, cfg)
	if err != nil {
		return err
	}
	var failed error
	select {
	case <-ctx.Done():
		cfg.Logger.Info("shutting down")
	case failed = <-s.Failed():
	}
	shutCtx, cancel2 := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel2()
	err = s.Close(shutCtx)
	if failed != nil {
		return nodeFailed(cfg.DataDir, failed)
	}
	return err
}

// nodeFailed is the error a node stops with when its Raft log cannot be
// written (server.Server.Failed).
func nodeFailed(dataDir string, err error) error {
	return fmt.Errorf("stopped: %w; free space under %s (or repair its disk) and start the node again: it comes back with everything it acknowledged", err, dataDir)
}

// recoverCluster runs server.Recover for --recover-cluster and says what
// it did and what the operator does next.
func recoverCluster(w io.Writer, cfg server.Config) error {
	if cfg.Join != "" {
		return errors.New("--recover-cluster keeps this node's data and makes it a cluster of its own: drop --join")
	}
	rec, err := server.Recover(cfg)
	if errors.Is(err, raftnode.ErrNothingToRecover) {
		return fmt.Errorf("--recover-cluster: %s holds no raft state: there is nothing to recover (is --data-dir the node's?)", cfg.DataDir)
	}
	if err != nil {
		return fmt.Errorf("--recover-cluster: %w", err)
	}
	var lost []string
	fmt.Fprintf(w, "recovered: node %s, at %s, is the one voter of a new cluster, holding the log up to raft index %d\n", cfg.NodeID, rec.Address, rec.Index)
	fmt.Fprintln(w, "the configuration before:")
	for _, sv := range rec.Previous {
		fmt.Fprintf(w, "  %s  %s  %s\n", sv.ID, sv.Suffrage, sv.RaftAddr)
		if sv.ID != cfg.NodeID {
			lost = append(lost, sv.ID)
		}
	}
	fmt.Fprintln(w, "next: start this node again without --recover-cluster, then start new nodes with --join pointing at it")
	if len(lost) > 0 {
		fmt.Fprintf(w, "never start %s again on their old data directories: they could elect a leader of the old cluster between them; wipe those directories and join them as new nodes\n", strings.Join(lost, ", "))
	}
	return nil
}
