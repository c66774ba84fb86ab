package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/anishathalye/porcupine"
)

// The chaos test's clients: each sends its requests to a node picked at
// random (a dead one refuses the connection) and records every operation
// with its call and return time for the linearizability check.

// chaosHTTP gives up on a request after a few seconds: the answer is then
// ambiguous, as when the node died with the request in flight.
var chaosHTTP = &http.Client{Timeout: 5 * time.Second}

// chaosAnswer is one HTTP exchange: err for a transport failure.
type chaosAnswer struct {
	status int
	body   map[string]any
	err    error
}

// refused is a request that never reached a process: it had no effect.
func (a chaosAnswer) refused() bool { return errors.Is(a.err, syscall.ECONNREFUSED) }

// code is the error envelope's code.
func (a chaosAnswer) code() string {
	e, _ := a.body["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

func chaosDo(method, url, key, body string, headers ...string) chaosAnswer {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), chaosHTTP.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return chaosAnswer{err: err}
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := chaosHTTP.Do(req)
	if err != nil {
		return chaosAnswer{err: err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return chaosAnswer{status: resp.StatusCode, err: err}
	}
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return chaosAnswer{status: resp.StatusCode, body: m}
}

// chaosAccount is one account the clients load, and what they saw of it.
type chaosAccount struct {
	id, key string
}

// chaosAck is an acknowledged create: the video id the API gave a prompt.
type chaosAck struct {
	account, prompt, video string
	call                   int64 // when the first attempt for the prompt began
}

// chaosRecorder collects the history and the acknowledged creates.
type chaosRecorder struct {
	start time.Time
	mu    sync.Mutex
	ops   []porcupine.Operation
	acks  []chaosAck
	calls map[string]int64 // prompt -> its first attempt's call time
	// unknown counts ambiguous answers, refused the connections refused.
	unknown, refused int
	failedReads      map[string]int // why reads failed
	errs             []string       // answers the contract does not allow
}

func newChaosRecorder() *chaosRecorder {
	return &chaosRecorder{start: time.Now(), calls: map[string]int64{}, failedReads: map[string]int{}}
}

// now is the history's clock: nanoseconds since the recorder began.
func (r *chaosRecorder) now() int64 { return int64(time.Since(r.start)) }

func (r *chaosRecorder) add(client int, in chaosIn, out chaosOut, call, ret int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
}

// chaosCost is what one create costs: a 5 s manual e2eModel video.
const chaosCost = manualPrice

// chaosClient is one goroutine's worth of load on one account.
type chaosClient struct {
	n     int // porcupine client id
	acct  chaosAccount
	urls  []string // the nodes' public URLs
	rec   *chaosRecorder
	rng   *rand.Rand
	seq   int
	tags  *int // the account's next Idempotency-Key tag (shared; under rec.mu)
	limit int  // keyed creates per account (tags are bits of a uint64)
}

func (c *chaosClient) url(path string) string { return c.urls[c.rng.IntN(len(c.urls))] + path }

// read records GET /v1/me; a read that fails had no effect and is left out.
func (c *chaosClient) read() {
	call := c.rec.now()
	a := chaosDo(http.MethodGet, c.url("/v1/me"), c.acct.key, "")
	ret := c.rec.now()
	if a.err != nil || a.status != http.StatusOK {
		c.rec.mu.Lock()
		reason := fmt.Sprint(a.status, " ", a.code())
		if a.err != nil {
			reason = a.err.Error()
			if i := strings.LastIndex(reason, ": "); i >= 0 {
				reason = reason[i+2:]
			}
		}
		c.rec.failedReads[reason]++
		c.rec.mu.Unlock()
		return
	}
	c.rec.add(c.n, chaosIn{account: c.acct.id, kind: opRead}, chaosOut{balance: int64(num(a.body, "credits"))}, call, ret)
}

// createOnce sends one create without a key and records it; an ambiguous
// answer is recorded as such and not retried (a retry could create twice).
// It reports whether the answer was ambiguous.
func (c *chaosClient) createOnce() bool {
	c.seq++
	prompt := fmt.Sprintf("chaos %s client %d create %d", c.acct.id, c.n, c.seq)
	in := chaosIn{account: c.acct.id, kind: opCreate, tag: -1, cost: chaosCost}
	call := c.rec.now()
	a := chaosDo(http.MethodPost, c.url("/v1/videos"), c.acct.key, manualBody(prompt, ""))
	return c.record(in, prompt, call, a)
}

// createKeyed sends a create with an Idempotency-Key and retries it with the
// same key until it gets a definite answer or stop closes. It returns false
// once the account's keys are used up.
func (c *chaosClient) createKeyed(stop <-chan struct{}) bool {
	c.rec.mu.Lock()
	tag := *c.tags
	*c.tags++
	c.rec.mu.Unlock()
	if tag >= c.limit {
		return false
	}
	key := fmt.Sprintf("chaos-%s-%d", c.acct.id, tag)
	prompt := "chaos keyed " + key
	in := chaosIn{account: c.acct.id, kind: opCreate, tag: tag, cost: chaosCost}
	for {
		call := c.rec.now()
		a := chaosDo(http.MethodPost, c.url("/v1/videos"), c.acct.key, manualBody(prompt, ""), "Idempotency-Key", key)
		if !c.record(in, prompt, call, a) {
			return true
		}
		select {
		case <-stop:
			return true
		case <-time.After(200 * time.Millisecond): // back-off between retries, not a wait for an event
		}
	}
}

// record files a create's answer and reports whether it was ambiguous (or
// refused: the caller may try again either way).
func (c *chaosClient) record(in chaosIn, prompt string, call int64, a chaosAnswer) bool {
	ret := c.rec.now()
	c.rec.mu.Lock()
	if _, ok := c.rec.calls[prompt]; !ok {
		c.rec.calls[prompt] = call
	}
	c.rec.mu.Unlock()
	switch {
	case a.refused() && in.tag < 0:
		// Without an Idempotency-Key a POST is never retried by the
		// transport, so a refused connection means nothing was sent. With
		// one, net/http may have sent it on a kept-alive connection that
		// then broke and only its own retry was refused: ambiguous (below).
		c.rec.mu.Lock()
		c.rec.refused++
		c.rec.mu.Unlock()
		return true
	case a.err == nil && a.status == http.StatusCreated:
		id, _ := a.body["id"].(string)
		c.ack(prompt, id, call)
		c.rec.add(c.n, in, chaosOut{result: resOK}, call, ret)
		return false
	case a.err == nil && a.status == http.StatusConflict && a.code() == "duplicate_request":
		d, _ := a.body["error"].(map[string]any)["details"].(map[string]any)
		id, _ := d["existing_video_id"].(string)
		c.ack(prompt, id, call)
		c.rec.add(c.n, in, chaosOut{result: resOK}, call, ret)
		return false
	case a.err == nil && a.status == http.StatusConflict && a.code() == "idempotency_in_flight":
		return true // the first attempt's own record covers its effect
	case a.err == nil && a.status == http.StatusPaymentRequired && a.code() == "insufficient_credits":
		c.rec.add(c.n, in, chaosOut{result: resInsufficient}, call, ret)
		return false
	case a.err == nil && a.status < 500:
		c.rec.mu.Lock()
		c.rec.errs = append(c.rec.errs, fmt.Sprintf("create %q: unexpected %d %v", prompt, a.status, a.body))
		c.rec.mu.Unlock()
		return false
	}
	c.rec.mu.Lock()
	c.rec.unknown++
	c.rec.mu.Unlock()
	c.rec.add(c.n, in, chaosOut{result: resUnknown}, call, neverReturned)
	return true
}

func (c *chaosClient) ack(prompt, id string, call int64) {
	c.rec.mu.Lock()
	defer c.rec.mu.Unlock()
	c.rec.acks = append(c.rec.acks, chaosAck{account: c.acct.id, prompt: prompt, video: id, call: call})
}

// definite is how many creates got a definite answer so far (201, or 402
// once the credits are spent): the load's progress.
func (r *chaosRecorder) definite() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, op := range r.ops {
		if in := op.Input.(chaosIn); in.kind == opCreate && op.Output.(chaosOut).result != resUnknown {
			n++
		}
	}
	return n
}
