// Package server assembles a control-plane node: the Raft node and its FSM, the
// public /v1 listener, the admin listener and the jobs that run only on the leader.
// cmd/vidfarm turns flags into a Config and calls Start.
package server

import (
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

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/vidfarm/vidfarm/controlplane/admin"
	"github.com/vidfarm/vidfarm/controlplane/api"
	"github.com/vidfarm/vidfarm/controlplane/blob"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/controlplane/raftnode"
)

// Config is everything a control-plane node is started with.
type Config struct {
	DataDir     string
	NodeID      string
	Listen      string // public API
	AdminListen string
	RaftListen  string
	AdminToken  string
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
}

// Server is a running control-plane node.
type Server struct {
	cfg       Config
	Node      *raftnode.Node
	API       *api.API
	public    *http.Server
	admin     *http.Server
	publicLn  net.Listener
	adminLn   net.Listener
	log       *slog.Logger
	stop      context.CancelFunc
	wg        sync.WaitGroup
	closeOnce sync.Once
}

// Start opens the node, waits until it can take writes and starts serving.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.AdminToken == "" {
		return nil, errors.New("an admin token is required (--admin-token or VIDFARM_ADMIN_TOKEN)")
	}
	if cfg.NodeID == "" {
		cfg.NodeID = "node1"
	}
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	secret, err := blobSecret(cfg)
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
	if cfg.PublicURL == "" {
		cfg.PublicURL = "http://" + publicLn.Addr().String()
	}
	cfg.PublicURL = strings.TrimRight(cfg.PublicURL, "/")
	if cfg.AppURL == "" {
		cfg.AppURL = "https://app.vidfarm.example"
	}
	f := fsm.New()
	node, err := raftnode.Open(raftnode.Config{
		DataDir: filepath.Join(cfg.DataDir, "raft"), NodeID: cfg.NodeID, RaftAddr: cfg.RaftListen,
		Logger: cfg.Logger, NoSync: cfg.NoSync,
	}, f)
	if err != nil {
		publicLn.Close()
		adminLn.Close()
		return nil, err
	}
	s := &Server{cfg: cfg, Node: node, publicLn: publicLn, adminLn: adminLn, log: cfg.Logger}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), newStateCollector(f, node))
	s.API, err = api.New(api.Config{
		FSM: f, Store: node, Logger: cfg.Logger, Signer: blob.Signer{Key: secret, BaseURL: cfg.PublicURL},
		Limits: cfg.Limits, AppURL: cfg.AppURL, Registry: reg,
	})
	if err != nil {
		node.Close()
		publicLn.Close()
		adminLn.Close()
		return nil, err
	}
	s.public = &http.Server{Handler: s.API, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	s.admin = &http.Server{Handler: admin.Handler(admin.Config{Token: cfg.AdminToken, FSM: f, Node: node, Logger: cfg.Logger, Gatherer: reg}),
		ReadHeaderTimeout: 10 * time.Second}
	if err := node.WaitLeader(ctx); err != nil {
		s.Close(context.Background())
		return nil, err
	}
	bg, stop := context.WithCancel(context.Background())
	s.stop = stop
	s.serve(s.public, publicLn, "public")
	s.serve(s.admin, adminLn, "admin")
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.leaderJobs(bg)
	}()
	s.log.Info("control plane ready", "node_id", cfg.NodeID, "public", publicLn.Addr().String(),
		"admin", adminLn.Addr().String(), "raft", node.RaftAddr(), "data_dir", cfg.DataDir)
	return s, nil
}

func (s *Server) serve(srv *http.Server, ln net.Listener, name string) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("listener stopped", "listener", name, "err", err)
		}
	}()
}

// PublicAddr is the bound address of the public API.
func (s *Server) PublicAddr() string { return s.publicLn.Addr().String() }

// AdminAddr is the bound address of the admin API.
func (s *Server) AdminAddr() string { return s.adminLn.Addr().String() }

// PublicURL is the base URL clients use.
func (s *Server) PublicURL() string { return s.cfg.PublicURL }

// Close drains the listeners and shuts the node down.
func (s *Server) Close(ctx context.Context) error {
	var err error
	s.closeOnce.Do(func() {
		if s.stop != nil {
			s.stop()
		}
		_ = s.public.Shutdown(ctx)
		_ = s.admin.Shutdown(ctx)
		s.wg.Wait()
		s.API.Close()
		err = s.Node.Close()
	})
	return err
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

// leaderJobs runs what only the leader does; each tick checks leadership, so a
// node that loses it stops and a new leader picks up from FSM state.
func (s *Server) leaderJobs(ctx context.Context) {
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !s.Node.IsLeader() {
			continue
		}
		before := time.Now().Add(-time.Duration(fsm.IdempotencyTTL)).UnixNano()
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		if n, err := s.Node.Apply(actx, &fsm.ExpireIdempotency{Before: before}); err != nil {
			s.log.Warn("expire idempotency keys", "err", err)
		} else if n.(int) > 0 {
			s.log.Info("expired idempotency keys", "count", n)
		}
		cancel()
	}
}
