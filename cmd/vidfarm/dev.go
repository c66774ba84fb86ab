package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/vidfarm/vidfarm/agent"
	"github.com/vidfarm/vidfarm/controlplane/admin"
	"github.com/vidfarm/vidfarm/controlplane/server"
)

// devState is what `vidfarm dev` remembers between runs in its data directory.
type devState struct {
	AdminToken string `json:"admin_token"`
	AccountID  string `json:"account_id"`
}

func runDev(args []string) error {
	fs := flag.NewFlagSet("dev", flag.ExitOnError)
	var sf serverFlags
	bindServerFlags(fs, &sf, "./data/dev")
	noAgent := fs.Bool("no-agent", false, "start only the control plane, without the local render agent")
	if err := parse(fs, args); err != nil {
		return err
	}
	// The embedded farm's agent and admin client talk plain http on loopback.
	if sf.cfg.TLS != (server.TLSConfig{}) {
		return errors.New("vidfarm dev serves plain http on loopback; the --tls-* and --raft-tls-* flags are for vidfarm server")
	}
	statePath := filepath.Join(sf.cfg.DataDir, "dev.json")
	st, err := loadDevState(statePath)
	if err != nil {
		return err
	}
	if sf.cfg.AdminToken == "" {
		sf.cfg.AdminToken = st.AdminToken
	}
	if sf.cfg.AdminToken == "" {
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		sf.cfg.AdminToken = "vfadm_" + hex.EncodeToString(b)
	}
	st.AdminToken = sf.cfg.AdminToken
	cfg, err := sf.config()
	if err != nil {
		return err
	}
	// A second Ctrl-C stops the local agent's drain at once, as it does a
	// render node's.
	ctx, stopNow, stop := agent.NotifyStop(os.Interrupt, syscall.SIGTERM)
	defer stop()
	startCtx, cancel := context.WithTimeout(ctx, sf.startTimeout)
	defer cancel()
	s, err := server.Start(startCtx, cfg)
	if err != nil {
		return err
	}
	defer func() {
		c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = s.Close(c)
	}()
	agentDone := make(chan error, 1)
	if *noAgent {
		agentDone <- nil
	} else {
		// The embedded farm's one render node: procedural rendering on this machine's
		// CPU, through the same agent protocol a GPU node uses.
		go func() {
			agentDone <- agent.Run(ctx, agent.Config{
				Server: "http://" + s.AgentAddr(), Token: s.AgentToken(), Name: "local",
				WorkDir: filepath.Join(cfg.DataDir, "agent-work"), Procedural: true,
				VirtualGPUs: agent.DefaultVirtualGPUs, Logger: cfg.Logger, StopNow: stopNow,
			})
		}()
	}
	cl := &admin.Client{Server: "http://" + s.AdminAddr(), Token: cfg.AdminToken}
	key, err := devKey(startCtx, cl, &st)
	if err != nil {
		return err
	}
	if err := saveDevState(statePath, st); err != nil {
		return err
	}
	farm := "control plane and one local render agent"
	if *noAgent {
		farm = "control plane only"
	}
	fmt.Printf(`
vidfarm is running (embedded single-node %s, data in %s)

  API:      %s/v1
  admin:    http://%s  (token: %s)
  console:  http://%s/console/  (log in with the admin token)
  agents:   http://%s  (token: %s)
  account:  %s (plan pro)
  API key:  %s

Try it:
  curl -s -H "Authorization: Bearer %s" %s/v1/me
  curl -s -H "Authorization: Bearer %s" -H "Content-Type: application/json" \
       -d '{"mode":"auto","prompt":"A product tour of a solar lantern","duration_seconds":15}' %s/v1/videos
  # then poll GET /v1/videos/<id> until "status" is "completed" and open its video_url

Press Ctrl-C to stop.
`, farm, cfg.DataDir, s.PublicURL(), s.AdminAddr(), cfg.AdminToken, s.AdminAddr(), s.AgentAddr(), s.AgentToken(),
		st.AccountID, key, key, s.PublicURL(), key, s.PublicURL())
	select {
	case <-ctx.Done():
		return <-agentDone
	case err := <-s.Failed():
		return nodeFailed(cfg.DataDir, err)
	}
}

// devKey makes a fresh key for the dev account, creating the account on first run.
// Keys are shown only once, so every run prints a new one.
func devKey(ctx context.Context, cl *admin.Client, st *devState) (string, error) {
	if st.AccountID != "" {
		if _, err := cl.Account(ctx, st.AccountID); err == nil {
			k, err := cl.CreateKey(ctx, st.AccountID)
			return k.APIKey, err
		}
	}
	a, err := cl.CreateAccount(ctx, "dev", "pro", 1000)
	if err != nil {
		return "", fmt.Errorf("create dev account: %w", err)
	}
	st.AccountID = a.AccountID
	return a.APIKey, nil
}

func loadDevState(p string) (devState, error) {
	var st devState
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("read %s: %w", p, err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("parse %s: %w", p, err)
	}
	return st, nil
}

func saveDevState(p string, st devState) error {
	b, _ := json.MarshalIndent(st, "", "  ")
	if err := os.WriteFile(p, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	return nil
}
