package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/admin"
	"github.com/vidfarm/vidfarm/controlplane/api"
	"github.com/vidfarm/vidfarm/controlplane/raftnode"
	"github.com/vidfarm/vidfarm/controlplane/server"
	"github.com/vidfarm/vidfarm/scheduler"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

const (
	adminToken = "console-test-admin-token"
	agentToken = "console-test-agent-token"
)

// farm is one real control-plane node (Raft, state file, HTTP on loopback)
// and the calls a test makes on it as an API client and as agents.
type farm struct {
	t     testing.TB
	srv   *server.Server
	admin *admin.Client
}

func startFarm(t testing.TB, opts ...func(*server.Config)) *farm {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := server.Config{
		DataDir: t.TempDir(), NodeID: "cp1", Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0", RaftListen: "127.0.0.1:0",
		AdminToken: adminToken, AgentToken: agentToken, AppURL: "https://app.test", Limits: api.Limits{Disabled: true},
		// A lone node leads as soon as its timer fires.
		RaftTiming: raftnode.Timing{Heartbeat: 100 * time.Millisecond, Election: 100 * time.Millisecond, LeaderLease: 100 * time.Millisecond},
		// Leases outlast the test: nothing expires behind its back.
		LeaseDuration: 2 * time.Minute, HeartbeatInterval: 5 * time.Second, RetryBackoff: -1,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	for _, o := range opts {
		o(&cfg)
	}
	srv, err := server.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("start control plane: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Close(ctx)
	})
	return &farm{t: t, srv: srv, admin: &admin.Client{Server: "http://" + srv.AdminAddr(), Token: adminToken}}
}

// consoleURL is the console's page on this node.
func (f *farm) consoleURL() string { return "http://" + f.srv.AdminAddr() + "/console/" }

// call sends a JSON body (nil: none) with a bearer token and decodes a 2xx
// answer into out (nil: ignore it).
func (f *farm) call(method, base, path, token string, body, out any) int {
	f.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, _ := json.Marshal(b)
		rd = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, base+path, rd)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode >= 300 {
		f.t.Fatalf("%s %s: %d %s", method, path, res.StatusCode, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			f.t.Fatalf("%s %s: %v in %s", method, path, err, raw)
		}
	}
	return res.StatusCode
}

func (f *farm) agent(method, path, cred string, body, out any) int {
	f.t.Helper()
	return f.call(method, "http://"+f.srv.AgentAddr(), path, cred, body, out)
}

// account makes an account and returns an API key of it.
func (f *farm) account() string {
	f.t.Helper()
	a, err := f.admin.CreateAccount(context.Background(), "console test", "pro", 100_000)
	if err != nil {
		f.t.Fatalf("create account: %v", err)
	}
	return a.APIKey
}

// video creates a manual video of model and returns its id.
func (f *farm) video(key, model string) string {
	f.t.Helper()
	var v struct {
		ID string `json:"id"`
	}
	f.call("POST", f.srv.PublicURL(), "/v1/videos", key, map[string]any{"mode": "manual", "prompt": "a red fox in the snow",
		"model": model, "duration_seconds": 5}, &v)
	return v.ID
}

// register registers an agent with two 80 GB GPUs that runs the given
// models, and returns its credential.
func (f *farm) register(name string, models []string) string {
	f.t.Helper()
	gpus := []scheduler.GPU{{ID: "GPU-0", MemoryTotalGB: 80, MemoryFreeGB: 79}, {ID: "GPU-1", MemoryTotalGB: 80, MemoryFreeGB: 79}}
	var reg wire.RegisterResponse
	f.agent("POST", "/agent/v1/register", agentToken, wire.RegisterRequest{Name: name, Capacity: wire.Capacity{Hostname: name, GPUs: gpus,
		CPUSlots: 4, Tools: []string{"ffmpeg", "espeak-ng"}, Models: models, WarmModels: models[:1], Virtual: true}}, &reg)
	return reg.Credential
}

// lease takes the next task for a node, waiting up to 5 s for one.
func (f *farm) lease(cred string) wire.Assignment {
	f.t.Helper()
	var a wire.Assignment
	if st := f.agent("POST", "/agent/v1/lease?wait=5", cred, nil, &a); st != http.StatusOK {
		f.t.Fatalf("lease: %d, no task", st)
	}
	return a
}

// heartbeat reports a held lease at percent.
func (f *farm) heartbeat(cred string, a wire.Assignment, percent float64) {
	f.t.Helper()
	f.agent("POST", "/agent/v1/heartbeat", cred, wire.HeartbeatRequest{Leases: []wire.LeaseReport{{TaskID: a.TaskID, Token: a.Token, Percent: percent}}}, nil)
}

// complete uploads a clip for a render and completes it.
func (f *farm) complete(cred string, a wire.Assignment) {
	f.t.Helper()
	key := "videos/" + a.Video.ID + "/" + a.Name + "/clip.mp4"
	f.agent("PUT", "/agent/v1/blobs/"+key+"?lease_token="+strconv.FormatUint(a.Token, 10), cred, []byte("bytes of "+key), nil)
	f.agent("POST", "/agent/v1/tasks/"+url.PathEscape(a.TaskID)+"/complete", cred,
		wire.CompleteRequest{Token: a.Token, Artifacts: map[string]string{"clip.mp4": key}, DurationSeconds: float64(a.Video.DurationSeconds)}, nil)
}

// must fails the test on err.
func must(t testing.TB, err error, what string, args ...any) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", fmt.Sprintf(what, args...), err)
	}
}
