package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"
)

// burstResult is one answer of a burst.
type burstResult struct {
	status int
	body   []byte
	err    error
}

// burst sends n POST /v1/videos at once, request i with keys[i%len(keys)] and the
// given headers. The requests run in their own goroutines and never touch t.
func burst(base string, n int, keys []string, body string, headers ...string) []burstResult {
	out := make([]burstResult, n)
	gate := make(chan struct{})
	var wg sync.WaitGroup
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}}
	defer client.CloseIdleConnections()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, err := http.NewRequest(http.MethodPost, base+"/v1/videos", bytes.NewReader([]byte(body)))
			if err != nil {
				out[i].err = err
				return
			}
			req.Header.Set("Authorization", "Bearer "+keys[i%len(keys)])
			req.Header.Set("Content-Type", "application/json")
			for j := 0; j+1 < len(headers); j += 2 {
				req.Header.Set(headers[j], headers[j+1])
			}
			<-gate
			resp, err := client.Do(req)
			if err != nil {
				out[i].err = err
				return
			}
			defer resp.Body.Close()
			out[i].status = resp.StatusCode
			out[i].body, out[i].err = io.ReadAll(resp.Body)
		}()
	}
	close(gate)
	wg.Wait()
	return out
}

// tally counts answers by status and error code, failing on transport errors.
func tally(t *testing.T, rs []burstResult) (byStatus map[int]int, byCode map[string]int) {
	t.Helper()
	byStatus, byCode = map[int]int{}, map[string]int{}
	for _, r := range rs {
		if r.err != nil {
			t.Fatalf("request failed: %v", r.err)
		}
		byStatus[r.status]++
		if r.status >= 300 {
			var env struct {
				Error struct {
					Code string `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal(r.body, &env); err != nil || env.Error.Code == "" {
				t.Fatalf("%d answer is not an error envelope: %s", r.status, r.body)
			}
			byCode[env.Error.Code]++
		}
	}
	return byStatus, byCode
}

// watchBalance samples the account's balance straight from the FSM every
// millisecond until stop is closed and returns the lowest value seen.
func watchBalance(h *harness, acct string, stop <-chan struct{}) <-chan int64 {
	low := make(chan int64, 1)
	go func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		lowest := int64(1) << 62
		for {
			if a, ok := h.srv.Node.FSM.Account(acct); ok && a.Credits < lowest {
				lowest = a.Credits
			}
			select {
			case <-stop:
				low <- lowest
				return
			case <-tick.C:
			}
		}
	}()
	return low
}

func TestConcurrentCreatesSpendExactlyTheBalance(t *testing.T) {
	h := start(t)
	acct, key := h.account("pro", 30)
	stop := make(chan struct{})
	low := watchBalance(h, acct, stop)

	const n = 200
	rs := burst(h.base, n, []string{key}, `{"mode":"auto","prompt":"a paper boat","duration_seconds":5}`)
	close(stop)
	byStatus, byCode := tally(t, rs)
	if byStatus[http.StatusCreated] != 10 || byStatus[http.StatusPaymentRequired] != 190 || len(byStatus) != 2 {
		t.Fatalf("statuses %v, want 10 × 201 and 190 × 402", byStatus)
	}
	if byCode["insufficient_credits"] != 190 {
		t.Fatalf("codes %v", byCode)
	}
	var charged int64
	ids := map[string]bool{}
	for _, r := range rs {
		var v struct {
			ID      string `json:"id"`
			Charged int64  `json:"credits_charged"`
			Error   struct {
				Details struct {
					Required  int64 `json:"required_credits"`
					Remaining int64 `json:"remaining_credits"`
				} `json:"details"`
			} `json:"error"`
		}
		if err := json.Unmarshal(r.body, &v); err != nil {
			t.Fatal(err)
		}
		switch r.status {
		case http.StatusCreated:
			charged += v.Charged
			ids[v.ID] = true
		case http.StatusPaymentRequired:
			if d := v.Error.Details; d.Required != 3 || d.Remaining < 0 || d.Remaining >= 3 {
				t.Fatalf("402 details %+v: %s", d, r.body)
			}
		}
	}
	if charged != 30 || len(ids) != 10 {
		t.Fatalf("%d distinct videos charged %d in all, want 10 charged 30", len(ids), charged)
	}
	if m := <-low; m < 0 {
		t.Fatalf("balance went as low as %d during the burst", m)
	}
	me := h.do("GET", "/v1/me", key, nil)
	if me.Status != http.StatusOK || me.json(t)["credits"].(float64) != 0 {
		t.Fatalf("GET /v1/me after the burst: %s", me.Body)
	}
	list := h.do("GET", "/v1/videos?limit=100", key, nil)
	if list.Status != http.StatusOK || list.json(t)["total"].(float64) != 10 {
		t.Fatalf("GET /v1/videos after the burst: %s", list.Body)
	}
}

func TestConcurrentFreeCreatesMakeOnePreview(t *testing.T) {
	h := start(t)
	acct, key := h.account("free", 0)
	keys := []string{key}
	for range 2 {
		k, err := h.admin.CreateKey(context.Background(), acct)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.APIKey)
	}
	rs := burst(h.base, 50, keys, `{"mode":"auto","prompt":"my one free video","duration_seconds":30}`)
	byStatus, byCode := tally(t, rs)
	if byStatus[http.StatusCreated] != 1 || byStatus[http.StatusForbidden] != 49 || byCode["free_limit_reached"] != 49 {
		t.Fatalf("statuses %v codes %v, want one 201 and 49 × 403 free_limit_reached", byStatus, byCode)
	}
	for _, r := range rs {
		if r.status == http.StatusCreated {
			var v map[string]any
			if err := json.Unmarshal(r.body, &v); err != nil || v["status"] != "preview" || v["credits_charged"] != float64(0) {
				t.Fatalf("the one free video: %s", r.body)
			}
		}
	}
	for _, k := range keys {
		l := h.do("GET", "/v1/videos", k, nil)
		if l.Status != http.StatusOK || l.json(t)["total"].(float64) != 1 {
			t.Fatalf("listing with key %s…: %s", k[:12], l.Body)
		}
	}
	if me := h.do("GET", "/v1/me", key, nil).json(t); me["free_video_available"] != false || me["credits"].(float64) != 0 {
		t.Fatalf("account after the burst: %v", me)
	}
}

func TestConcurrentRetriesWithOneIdempotencyKey(t *testing.T) {
	h := start(t)
	acct, key := h.account("pro", 100)
	body := `{"mode":"auto","prompt":"a retried request","duration_seconds":10}`
	rs := burst(h.base, 40, []string{key}, body, "Idempotency-Key", "retry-storm")
	byStatus, byCode := tally(t, rs)
	if byStatus[http.StatusCreated] < 1 || byStatus[http.StatusCreated]+byCode["idempotency_in_flight"] != 40 {
		t.Fatalf("statuses %v codes %v: want only 201 and 409 idempotency_in_flight", byStatus, byCode)
	}
	var first []byte
	for _, r := range rs {
		if r.status != http.StatusCreated {
			continue
		}
		if first == nil {
			first = r.body
		} else if !bytes.Equal(first, r.body) {
			t.Fatalf("two 201 answers for one key differ:\n%s\n%s", first, r.body)
		}
	}
	// A retry after the storm replays the same answer.
	if again := h.do("POST", "/v1/videos", key, body, "Idempotency-Key", "retry-storm"); again.Status != http.StatusCreated || !bytes.Equal(again.Body, first) {
		t.Fatalf("retry after the storm: %d %s", again.Status, again.Body)
	}
	a, _ := h.srv.Node.FSM.Account(acct)
	if a.Credits != 94 || h.srv.Node.FSM.Stats().Videos != 1 {
		t.Fatalf("balance %d and %d videos, want one video charged once (94)", a.Credits, h.srv.Node.FSM.Stats().Videos)
	}
}

func TestConcurrentAccountsDoNotShareBalances(t *testing.T) {
	h := start(t)
	type acct struct{ id, key string }
	var accts []acct
	for range 4 {
		id, key := h.account("max", 9) // three 5-second videos each
		accts = append(accts, acct{id, key})
	}
	keys := make([]string, 0, len(accts))
	for _, a := range accts {
		keys = append(keys, a.key)
	}
	rs := burst(h.base, 40, keys, `{"mode":"auto","prompt":"shared farm","duration_seconds":5}`)
	byStatus, _ := tally(t, rs)
	if byStatus[http.StatusCreated] != 12 || byStatus[http.StatusPaymentRequired] != 28 {
		t.Fatalf("statuses %v, want 12 × 201 (three per account) and 28 × 402", byStatus)
	}
	for _, a := range accts {
		got, _ := h.srv.Node.FSM.Account(a.id)
		page := h.do("GET", "/v1/videos", a.key, nil).json(t)
		if got.Credits != 0 || page["total"].(float64) != 3 {
			t.Fatalf("account %s: balance %d, %v videos; want 0 and 3", a.id, got.Credits, page["total"])
		}
	}
}
