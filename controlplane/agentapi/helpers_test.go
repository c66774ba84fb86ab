package agentapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/agentapi"
	"github.com/vidfarm/vidfarm/controlplane/blob"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/controlplane/raftnode"
	"github.com/vidfarm/vidfarm/models"
	"github.com/vidfarm/vidfarm/scheduler"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

const agentToken = "test-agent-token"

// storeFunc adapts a function to agentapi.Store.
type storeFunc func(ctx context.Context, cmd fsm.Command) (any, error)

func (f storeFunc) Apply(ctx context.Context, cmd fsm.Command) (any, error) { return f(ctx, cmd) }

var _ agentapi.Store = storeFunc(nil)

// env is the agent API on loopback over a real Raft node and a real LocalStore.
type env struct {
	t      *testing.T
	node   *raftnode.Node
	fsm    *fsm.FSM
	blobs  *blob.LocalStore
	notify *agentapi.Notifier
	srv    *httptest.Server

	// idle receives a value each time a lease poll finds nothing and waits.
	idle chan struct{}

	mu      sync.Mutex
	account string
}

type envOption func(*agentapi.Config)

func newEnv(t *testing.T, opts ...envOption) *env {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	f := fsm.New()
	node, err := raftnode.Open(raftnode.Config{DataDir: t.TempDir(), NodeID: "node1", RaftAddr: "127.0.0.1:0", Logger: log, NoSync: true}, f)
	if err != nil {
		t.Fatalf("open raft node: %v", err)
	}
	t.Cleanup(func() { _ = node.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := node.WaitLeader(ctx); err != nil {
		t.Fatal(err)
	}
	blobs, err := blob.NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, node: node, fsm: f, blobs: blobs, notify: agentapi.NewNotifier(), idle: make(chan struct{}, 64)}
	cfg := agentapi.Config{
		FSM: f, Store: node, Blobs: blobs, Token: agentToken, Notifier: e.notify, Logger: log,
		LeaseDuration: 30 * time.Second, HeartbeatInterval: 5 * time.Second,
		Waiting: func() {
			select {
			case e.idle <- struct{}{}:
			default:
			}
		},
	}
	for _, o := range opts {
		o(&cfg)
	}
	e.srv = httptest.NewServer(agentapi.Handler(cfg))
	t.Cleanup(e.srv.Close)
	return e
}

// resp is an answer with its body read.
type resp struct {
	status int
	header http.Header
	body   []byte
}

func (r resp) String() string { return fmt.Sprintf("%d %s", r.status, r.body) }

// errCode returns the error envelope's code, and fails when the envelope lacks a request id.
func (r resp) errCode(t *testing.T) string {
	t.Helper()
	var env struct {
		Error struct {
			Code      string `json:"code"`
			Message   string `json:"message"`
			RequestID string `json:"request_id"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.body, &env); err != nil {
		t.Fatalf("error body %q: %v", r.body, err)
	}
	if env.Error.RequestID == "" || env.Error.RequestID != r.header.Get("X-Request-Id") {
		t.Fatalf("error %s: request id %q, header %q", r, env.Error.RequestID, r.header.Get("X-Request-Id"))
	}
	return env.Error.Code
}

// do sends body (JSON-encoded unless it is []byte or nil) with the token as Bearer.
func (e *env) do(ctx context.Context, method, path, token string, body any) resp {
	e.t.Helper()
	return e.doWith(ctx, method, path, token, body, nil)
}

// doWith is do with more request headers.
func (e *env) doWith(ctx context.Context, method, path, token string, body any, h http.Header) resp {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(ctx, method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return resp{status: res.StatusCode, header: res.Header, body: b}
}

func (e *env) call(method, path, token string, body any) resp {
	e.t.Helper()
	return e.do(context.Background(), method, path, token, body)
}

// want fails unless r has the status (and, for errors, the code).
func want(t *testing.T, r resp, status int, code string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("got %s, want status %d", r, status)
	}
	if code != "" {
		if got := r.errCode(t); got != code {
			t.Fatalf("got %s, want code %q", r, code)
		}
	}
}

// capacity is a node that can take every task of a manual wan-2.2 video.
func capacity(host string) wire.Capacity {
	return wire.Capacity{
		Hostname: host, CPUSlots: 2, Tools: []string{"ffmpeg", "espeak-ng"}, Models: []string{models.AutoSceneModel},
		GPUs: []scheduler.GPU{{ID: "GPU-0", MemoryTotalGB: 80, MemoryFreeGB: 80}},
	}
}

// register registers a node named name and returns what the server said.
func (e *env) register(name string) wire.RegisterResponse {
	e.t.Helper()
	return e.registerAgain(name, "")
}

// registerAgain registers name as the agent that held credential prev
// (wire.HeaderPreviousCredential; "" sends none).
func (e *env) registerAgain(name, prev string) wire.RegisterResponse {
	e.t.Helper()
	r := e.registerAs(name, capacity(name), prev)
	want(e.t, r, http.StatusCreated, "")
	var out wire.RegisterResponse
	if err := json.Unmarshal(r.body, &out); err != nil {
		e.t.Fatal(err)
	}
	return out
}

// registerAs sends a registration of name with c, as the agent that held
// prev.
func (e *env) registerAs(name string, c wire.Capacity, prev string) resp {
	e.t.Helper()
	h := http.Header{}
	if prev != "" {
		h.Set(wire.HeaderPreviousCredential, prev)
	}
	return e.doWith(context.Background(), "POST", "/agent/v1/register", agentToken, wire.RegisterRequest{Name: name, Capacity: c}, h)
}

// createVideo queues a manual video for a premium account, as the public API
// would, and pokes the notifier as the API does.
func (e *env) createVideo() string {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	e.mu.Lock()
	defer e.mu.Unlock()
	now := time.Now().UnixNano()
	if e.account == "" {
		e.account = "acct_test"
		if _, err := e.node.Apply(ctx, &fsm.CreateAccount{AccountID: e.account, Name: "test", Plan: fsm.PlanPro,
			Credits: 10_000, KeyID: "key_test", Now: now}); err != nil {
			e.t.Fatalf("create account: %v", err)
		}
	}
	id := fmt.Sprintf("vid_%d", now)
	if _, err := e.node.Apply(ctx, &fsm.CreateVideo{VideoID: id, AccountID: e.account, Price: 40, Now: now,
		Spec: fsm.Spec{Mode: fsm.ModeManual, Prompt: "a red fox in the snow", Model: models.AutoSceneModel,
			Resolution: "720p", DurationSeconds: 5, Operation: "text_to_video", AspectRatio: "16:9"}}); err != nil {
		e.t.Fatalf("create video: %v", err)
	}
	e.notify.Notify()
	return id
}

// lease asks for a task, waiting at most wait seconds.
func (e *env) lease(cred string, wait int) (wire.Assignment, resp) {
	e.t.Helper()
	r := e.call("POST", fmt.Sprintf("/agent/v1/lease?wait=%d", wait), cred, wire.LeaseRequest{})
	var a wire.Assignment
	if r.status == http.StatusOK {
		if err := json.Unmarshal(r.body, &a); err != nil {
			e.t.Fatal(err)
		}
	}
	return a, r
}

func taskPath(taskID, report string) string {
	return "/agent/v1/tasks/" + url.PathEscape(taskID) + "/" + report
}

// upload PUTs data at key.
func (e *env) upload(cred, key, data string) resp {
	e.t.Helper()
	return e.call("PUT", "/agent/v1/blobs/"+key+"?lease_token="+e.currentToken(key), cred, []byte(data))
}

// completeFinalize uploads a finalize task's video and poster under its
// lease and completes it with duration seconds; it returns their keys by
// artifact name.
func (e *env) completeFinalize(cred string, fin wire.Assignment, duration float64) map[string]string {
	e.t.Helper()
	files := map[string]string{}
	for _, f := range []string{wire.ArtifactVideo, wire.ArtifactPoster} {
		files[f] = artifactKey(fin, f)
		want(e.t, e.upload(cred, files[f], "bytes of "+f), http.StatusCreated, "")
	}
	want(e.t, e.call("POST", taskPath(fin.TaskID, "complete"), cred,
		wire.CompleteRequest{Token: fin.Token, Artifacts: files, DurationSeconds: duration}), http.StatusNoContent, "")
	return files
}

// currentToken is the token of the lease on the task that key belongs to ("" when
// none), so uploads in tests pass the token check and meet the node check.
func (e *env) currentToken(key string) string {
	parts := strings.Split(key, "/")
	if len(parts) < 3 {
		return ""
	}
	t, ok := e.fsm.Task(parts[1] + "/" + parts[2])
	if !ok || t.Lease == nil {
		return ""
	}
	return strconv.FormatUint(t.Lease.Token, 10)
}

func artifactKey(a wire.Assignment, file string) string {
	return "videos/" + a.Video.ID + "/" + a.Name + "/" + file
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
