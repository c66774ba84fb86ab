package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/vidfarm/vidfarm/controlplane/webhook/signature"
)

// chaosGrant is each loaded account's credits: enough for eight videos, so
// the clients also run into insufficient_credits.
const chaosGrant = 8 * chaosCost

// chaosHooks is the webhook receiver: the event types it got per video.
type chaosHooks struct {
	mu      sync.Mutex
	secrets map[string]string // account id -> signing secret
	got     map[string]map[string]int
	bad     []string
}

func (h *chaosHooks) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	acct := strings.TrimPrefix(r.URL.Path, "/hooks/")
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := signature.Verify(h.secrets[acct], r.Header.Get(signature.HeaderName), b, time.Now(), signature.DefaultTolerance); err != nil {
		h.bad = append(h.bad, fmt.Sprintf("%s: %v", acct, err))
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	var ev struct {
		Type string
		Data struct{ Video struct{ ID string } }
	}
	if err := json.Unmarshal(b, &ev); err != nil {
		h.bad = append(h.bad, fmt.Sprintf("%s: %v: %s", acct, err, b))
	}
	if h.got[ev.Data.Video.ID] == nil {
		h.got[ev.Data.Video.ID] = map[string]int{}
	}
	h.got[ev.Data.Video.ID][ev.Type]++
	w.WriteHeader(http.StatusNoContent)
}

func (h *chaosHooks) delivered(video, typ string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.got[video][typ] > 0
}

// Three server processes take continuous creates, reads and webhook
// deliveries while the leader is SIGKILLed (and restarted), then a follower
// (and restarted). Afterwards every acknowledged create exists exactly once,
// no prompt (one per create or per Idempotency-Key) made two videos, credits
// add up per account, every finished video's event arrived, the history of
// balances and creates is linearizable, and all nodes applied the same log.
func TestChaosSIGKILLUnderLoad(t *testing.T) {
	c := newChaosCluster(t, 3)
	c.startAll()
	leader := c.waitLeader(30*time.Second, c.nodes...)
	// The agent stays on a node that is never killed: the first kill is the
	// first leader, the second a follower other than this one.
	agentNode := (leader + 1) % len(c.nodes)
	startProc(t, "agent", []string{"agent", "--server", c.nodes[agentNode].agentURL(), "--token", e2eAgentToken, "--name", "chaos-agent",
		"--virtual-gpus", "4", "--work-dir", filepath.Join(c.dir, "agent"), "--drain-timeout", "1s", "--log-level", "info"}, nil, "agent running")

	hooks := &chaosHooks{secrets: map[string]string{}, got: map[string]map[string]int{}}
	rc := httptest.NewServer(hooks)
	defer rc.Close()
	adm := c.nodes[leader].adminClient()
	var accts []chaosAccount
	for i := range 2 {
		a, err := adm.CreateAccount(context.Background(), fmt.Sprintf("chaos-%d", i), "pro", chaosGrant)
		if err != nil {
			t.Fatal(err)
		}
		r := chaosDo(http.MethodPost, c.nodes[i].publicURL()+"/v1/webhooks", a.APIKey, `{"url":"`+rc.URL+`/hooks/`+a.AccountID+`"}`)
		if r.err != nil || r.status != http.StatusCreated {
			t.Fatalf("register webhook: %d %v %v", r.status, r.err, r.body)
		}
		hooks.mu.Lock()
		hooks.secrets[a.AccountID], _ = r.body["secret"].(string)
		hooks.mu.Unlock()
		accts = append(accts, chaosAccount{id: a.AccountID, key: a.APIKey})
	}
	probe, err := adm.CreateAccount(context.Background(), "chaos-probe", "pro", 1_000_000)
	if err != nil {
		t.Fatal(err)
	}

	rec := newChaosRecorder()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var urls []string
	for _, n := range c.nodes {
		urls = append(urls, n.publicURL())
	}
	runChaosClients(accts, urls, rec, stop, &wg)

	waitProgress := func(more int, what string) {
		want := rec.definite() + more
		eventually(t, 90*time.Second, fmt.Sprintf("%d definite answers to creates %s", want, what), func() bool { return rec.definite() >= want })
	}
	waitProgress(4, "before the first kill")
	killed, took := c.failoverOnce(probe.AccountID)
	t.Logf("leader %s SIGKILLed under load and restarted; new leader took writes after %d ms", killed, took.Milliseconds())
	waitProgress(3, "after the leader's restart")
	leader = c.waitLeader(30*time.Second, c.up()...)
	follower := -1
	for i := range c.nodes {
		if i != leader && i != agentNode {
			follower = i
		}
	}
	c.kill(follower)
	t.Logf("follower %s SIGKILLed under load", c.nodes[follower].id)
	waitProgress(2, "with a follower down")
	c.start(follower)
	c.waitLeader(60*time.Second, c.up()...)
	t.Logf("follower %s restarted", c.nodes[follower].id)
	waitProgress(2, "after the follower's restart")
	close(stop)
	wg.Wait()

	rec.mu.Lock()
	kinds := map[chaosKind]int{}
	for _, op := range rec.ops {
		kinds[op.Input.(chaosIn).kind]++
	}
	t.Logf("load: %d operations recorded (%d creates, %d reads), %d creates acknowledged, %d ambiguous answers, %d connections refused, failed reads %v",
		len(rec.ops), kinds[opCreate], kinds[opRead], len(rec.acks), rec.unknown, rec.refused, rec.failedReads)
	for _, e := range rec.errs {
		t.Error(e)
	}
	rec.mu.Unlock()
	finals := checkChaosVideos(t, c, accts, rec, hooks)
	checkChaosLinearizable(t, accts, rec, finals)
	c.waitSameApplied(60 * time.Second)
}

// runChaosClients starts, per account, a client creating with
// Idempotency-Keys, one creating without, and one reading the balance.
func runChaosClients(accts []chaosAccount, urls []string, rec *chaosRecorder, stop <-chan struct{}, wg *sync.WaitGroup) {
	pause := func(d time.Duration) bool { // back-off between requests, not a wait for an event
		select {
		case <-stop:
			return false
		case <-time.After(d):
			return true
		}
	}
	for i, a := range accts {
		tags := new(int)
		mk := func(k int) *chaosClient {
			return &chaosClient{n: 3*i + k, acct: a, urls: urls, rec: rec, rng: rand.New(rand.NewPCG(uint64(i), uint64(k))), tags: tags, limit: 60}
		}
		wg.Add(3)
		go func(cl *chaosClient) {
			defer wg.Done()
			for cl.createKeyed(stop) && pause(400*time.Millisecond) {
			}
		}(mk(0))
		go func(cl *chaosClient) {
			defer wg.Done()
			for {
				d := 500 * time.Millisecond
				if cl.createOnce() {
					d = time.Second // fewer ambiguous creates for the checker
				}
				if !pause(d) {
					return
				}
			}
		}(mk(1))
		go func(cl *chaosClient) {
			defer wg.Done()
			for pause(50 * time.Millisecond) {
				cl.read()
			}
		}(mk(2))
	}
}

// checkChaosLinearizable checks the recorded history, plus each failed
// video's refund (some time after its create began) and a final read per
// account, with porcupine.
func checkChaosLinearizable(t *testing.T, accts []chaosAccount, rec *chaosRecorder, finals chaosFinals) {
	t.Helper()
	rec.mu.Lock()
	ops := slices.Clone(rec.ops)
	rec.mu.Unlock()
	for _, r := range finals.refunds {
		ops = append(ops, porcupine.Operation{ClientId: 100, Input: chaosIn{account: r.account, kind: opRefund, tag: -1, cost: r.cost},
			Call: r.call, Output: chaosOut{}, Return: neverReturned})
	}
	end := rec.now()
	for _, a := range accts {
		ops = append(ops, porcupine.Operation{ClientId: 101, Input: chaosIn{account: a.id, kind: opRead},
			Call: end, Output: chaosOut{balance: finals.balance[a.id]}, Return: end + 1})
	}
	model := chaosModel(chaosGrant)
	res, info := porcupine.CheckOperationsVerbose(model, ops, 2*time.Minute)
	t.Logf("linearizability of %d operations (%d refunds): %s", len(ops), len(finals.refunds), res)
	if res == porcupine.Ok {
		return
	}
	out := filepath.Join(os.TempDir(), fmt.Sprintf("vidfarm-chaos-history-%d.html", time.Now().UnixNano()))
	if err := porcupine.VisualizePath(model, info, out); err == nil {
		t.Logf("history visualised in %s", out)
	}
	t.Errorf("the history of balances and creates is %s for linearizability (Illegal: a violation; Unknown: the checker ran out of time)", res)
}
