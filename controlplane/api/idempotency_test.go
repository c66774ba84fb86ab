package api_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/api"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

const autoBody = `{"mode":"auto","prompt":"a lighthouse at dusk","duration_seconds":10,"name":"lighthouse"}`

// gate holds the first CreateVideo proposal until released.
type gate struct {
	once    sync.Once
	entered chan struct{}
	release chan struct{}
}

func newGate() *gate { return &gate{entered: make(chan struct{}), release: make(chan struct{})} }

func (g *gate) wrap(inner api.Store) api.Store {
	return storeFunc(func(ctx context.Context, cmd fsm.Command) (any, error) {
		if _, ok := cmd.(*fsm.CreateVideo); ok {
			first := false
			g.once.Do(func() { first = true })
			if first {
				close(g.entered)
				<-g.release
			}
		}
		return inner.Apply(ctx, cmd)
	})
}

func waitChan(tb testing.TB, ch <-chan struct{}, what string) {
	tb.Helper()
	select {
	case <-ch:
	case <-time.After(20 * time.Second):
		tb.Fatalf("timed out waiting for %s", what)
	}
}

func TestIdempotencyInFlight(t *testing.T) {
	g := newGate()
	e := newEnv(t, withStore(g.wrap))
	acct, key := e.account(fsm.PlanPro, 100)

	first := make(chan response, 1)
	go func() {
		first <- e.send(http.MethodPost, "/v1/videos", key, autoBody, "Idempotency-Key", "order-1")
	}()
	waitChan(t, g.entered, "the first create to reach the store")

	// While the first is being committed, a retry with the key is told to wait.
	for _, body := range []string{autoBody, `{"mode":"auto","prompt":"something else"}`} {
		r := e.create(key, "order-1", body)
		er := r.wantError(t, http.StatusConflict, "idempotency_in_flight")
		if er["retryable"] != true || r.Header.Get("Retry-After") == "" {
			t.Fatalf("in-flight answer must be retryable with Retry-After: %s (Retry-After %q)", r.Body, r.Header.Get("Retry-After"))
		}
	}
	// Other keys, and requests without a key, are not held up.
	e.create(key, "order-2", autoBody).wantStatus(t, http.StatusCreated)
	e.create(key, "", autoBody).wantStatus(t, http.StatusCreated)
	if got := e.balance(acct); got != 88 {
		t.Fatalf("balance %d while the first is in flight, want 88", got)
	}

	close(g.release)
	var orig response
	select {
	case orig = <-first:
	case <-time.After(20 * time.Second):
		t.Fatal("first create never answered")
	}
	if orig.Err != nil {
		t.Fatal(orig.Err)
	}
	orig.wantStatus(t, http.StatusCreated)
	if orig.Header.Get("Idempotent-Replayed") != "" {
		t.Fatal("the original answer is flagged as a replay")
	}

	retry := e.create(key, "order-1", autoBody).wantStatus(t, http.StatusCreated)
	sameBody(t, retry.Body, orig.Body)
	if retry.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay lacks Idempotent-Replayed: %v", retry.Header)
	}
	if loc, want := retry.Header.Get("Location"), "/v1/videos/"+orig.json(t)["id"].(string); loc != want {
		t.Fatalf("replay Location %q, want %q", loc, want)
	}
	if got := e.balance(acct); got != 82 {
		t.Fatalf("balance %d after three creates of 6, want 82", got)
	}
}

func TestIdempotencyReplay(t *testing.T) {
	e := newEnv(t)
	acct, key := e.account(fsm.PlanPro, 30)
	orig := e.create(key, "k-1", autoBody).wantStatus(t, http.StatusCreated)
	id := orig.json(t)["id"].(string)

	t.Run("same JSON, other key order and spacing", func(t *testing.T) {
		for _, body := range []string{
			autoBody,
			`{"name":"lighthouse","duration_seconds":10,"prompt":"a lighthouse at dusk","mode":"auto"}`,
			"\n  {  \"mode\" : \"auto\",\n\t\"prompt\":\"a lighthouse at dusk\" , \"duration_seconds\": 10 ,\"name\":\"lighthouse\"}\n",
			`{"mode":"auto","prompt":"a lighthouse at dusk","duration_seconds":10,"name":"lighthouse"}` + "\r\n",
		} {
			r := e.create(key, "k-1", body).wantStatus(t, http.StatusCreated)
			sameBody(t, r.Body, orig.Body)
		}
	})

	t.Run("same key, different body", func(t *testing.T) {
		for _, body := range []string{
			`{"mode":"auto","prompt":"a lighthouse at dawn","duration_seconds":10,"name":"lighthouse"}`,
			`{"mode":"auto","prompt":"a lighthouse at dusk","duration_seconds":15,"name":"lighthouse"}`,
			`{"mode":"auto","prompt":"a lighthouse at dusk","duration_seconds":10}`,
		} {
			er := e.create(key, "k-1", body).wantError(t, http.StatusConflict, "duplicate_request")
			d, _ := er["details"].(map[string]any)
			if d["existing_video_id"] != id {
				t.Fatalf("details %v, want existing_video_id %s", d, id)
			}
		}
	})

	t.Run("original body after the admin failed the video", func(t *testing.T) {
		if _, err := e.admin.FailVideo(context.Background(), id, "operator cancelled"); err != nil {
			t.Fatal(err)
		}
		now := e.do(http.MethodGet, "/v1/videos/"+id, key, "").wantStatus(t, http.StatusOK).json(t)
		if now["status"] != "failed" || now["error"].(map[string]any)["credits_refunded"] != true {
			t.Fatalf("video after fail: %v", now)
		}
		r := e.create(key, "k-1", autoBody).wantStatus(t, http.StatusCreated)
		sameBody(t, r.Body, orig.Body)
		if got := e.balance(acct); got != 30 {
			t.Fatalf("balance %d after the refund, want 30", got)
		}
	})

	t.Run("replay after the balance ran out", func(t *testing.T) {
		drain := `{"mode":"auto","prompt":"drain","duration_seconds":50}` // 30 credits
		e.create(key, "", drain).wantStatus(t, http.StatusCreated)
		e.create(key, "", autoBody).wantError(t, http.StatusPaymentRequired, "insufficient_credits")
		r := e.create(key, "k-1", autoBody).wantStatus(t, http.StatusCreated)
		sameBody(t, r.Body, orig.Body)
	})

	t.Run("listing holds the video once", func(t *testing.T) {
		l := e.do(http.MethodGet, "/v1/videos?limit=100", key, "").wantStatus(t, http.StatusOK).json(t)
		if l["total"].(float64) != 2 {
			t.Fatalf("listing total %v, want 2 (the original and the drain)", l["total"])
		}
	})
}

func TestIdempotencyScopedPerAccount(t *testing.T) {
	e := newEnv(t)
	a1, k1 := e.account(fsm.PlanPro, 30)
	a2, k2 := e.account(fsm.PlanMax, 30)
	other := `{"mode":"auto","prompt":"another idea","duration_seconds":5}`
	r1 := e.create(k1, "shared", autoBody).wantStatus(t, http.StatusCreated)
	r2 := e.create(k2, "shared", other).wantStatus(t, http.StatusCreated)
	id1, id2 := r1.json(t)["id"], r2.json(t)["id"]
	if id1 == id2 {
		t.Fatal("two accounts got one video")
	}
	if e.balance(a1) != 24 || e.balance(a2) != 27 {
		t.Fatalf("balances %d and %d, want 24 and 27", e.balance(a1), e.balance(a2))
	}
	sameBody(t, e.create(k1, "shared", autoBody).wantStatus(t, http.StatusCreated).Body, r1.Body)
	sameBody(t, e.create(k2, "shared", other).wantStatus(t, http.StatusCreated).Body, r2.Body)
	// Each account's key is checked against its own record only.
	e.create(k1, "shared", other).wantError(t, http.StatusConflict, "duplicate_request")
	// Another video's id is not visible to the other account.
	e.do(http.MethodGet, "/v1/videos/"+id1.(string), k2, "").wantError(t, http.StatusNotFound, "not_found")
}

func TestIdempotencyOtherKeysOfTheAccount(t *testing.T) {
	e := newEnv(t)
	acct, k1 := e.account(fsm.PlanPro, 30)
	k2, err := e.admin.CreateKey(context.Background(), acct)
	if err != nil {
		t.Fatal(err)
	}
	orig := e.create(k1, "per-account", autoBody).wantStatus(t, http.StatusCreated)
	// Idempotency keys belong to the account, not to the API key that sent them.
	sameBody(t, e.create(k2.APIKey, "per-account", autoBody).wantStatus(t, http.StatusCreated).Body, orig.Body)
	if e.balance(acct) != 24 {
		t.Fatalf("balance %d, want 24", e.balance(acct))
	}
}

func TestIdempotencyFreePreview(t *testing.T) {
	e := newEnv(t)
	_, key := e.account(fsm.PlanFree, 0)
	orig := e.create(key, "free-1", autoBody).wantStatus(t, http.StatusCreated)
	v := orig.json(t)
	if v["status"] != "preview" || v["credits_charged"].(float64) != 0 {
		t.Fatalf("free create %s", orig.Body)
	}
	sameBody(t, e.create(key, "free-1", autoBody).wantStatus(t, http.StatusCreated).Body, orig.Body)
	e.create(key, "free-2", autoBody).wantError(t, http.StatusForbidden, "free_limit_reached")
}

func TestIdempotencyKeyHeader(t *testing.T) {
	e := newEnv(t)
	acct, key := e.account(fsm.PlanPro, 30)
	tests := []struct {
		name, idem string
		status     int
	}{
		{"255 characters", strings.Repeat("k", 255), http.StatusCreated},
		{"256 characters", strings.Repeat("k", 256), http.StatusBadRequest},
		{"non-ASCII", "clé-1", http.StatusBadRequest},
		{"printable punctuation", "order:1/2#x", http.StatusCreated},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := e.balance(acct)
			r := e.create(key, tc.idem, `{"mode":"auto","prompt":"x","duration_seconds":5}`)
			r.wantStatus(t, tc.status)
			if tc.status == http.StatusBadRequest {
				if r.code(t) != "invalid_request" || e.balance(acct) != before {
					t.Fatalf("bad key: %s, balance %d (was %d)", r.Body, e.balance(acct), before)
				}
			}
		})
	}
}
