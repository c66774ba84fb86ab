package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	d := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 5}, {0.9, 9}, {0.99, 10}, {0, 1}, {1, 10}} {
		if got := percentile(d, c.q); got != c.want {
			t.Errorf("percentile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	if percentile(nil, 0.5) != 0 {
		t.Error("percentile of nothing should be 0")
	}
}

// TestRunCreateCounts runs the generator against a loopback server that accepts
// every third request and refuses the rest with a coded error.
func TestRunCreateCounts(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer k1" && r.Header.Get("Authorization") != "Bearer k2" {
			t.Errorf("unexpected auth header %q", r.Header.Get("Authorization"))
		}
		if n.Add(1)%3 == 0 {
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"id":"vid_x"}`))
			return
		}
		w.WriteHeader(http.StatusPaymentRequired)
		_, _ = w.Write([]byte(`{"error":{"code":"insufficient_credits"}}`))
	}))
	defer srv.Close()
	var progressed atomic.Bool
	rep, err := RunCreate(context.Background(), CreateConfig{
		BaseURLs: []string{srv.URL}, APIKeys: []string{"k1", "k2"}, Concurrency: 4, Duration: 1500 * time.Millisecond,
		Progress: func(int64, time.Duration) { progressed.Store(true) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Requests == 0 || rep.Created == 0 {
		t.Fatalf("no traffic measured: %+v", rep)
	}
	if got := rep.Created + rep.Failures["insufficient_credits"]; got != rep.Requests {
		t.Fatalf("created %d + refused %d != requests %d", rep.Created, rep.Failures["insufficient_credits"], rep.Requests)
	}
	if rep.P50 <= 0 || rep.P99 < rep.P50 || rep.Max < rep.P99 {
		t.Fatalf("percentiles out of order: %+v", rep)
	}
	if !progressed.Load() {
		t.Fatal("progress callback never ran")
	}
}

func TestRunCreateRejectsBadConfig(t *testing.T) {
	if _, err := RunCreate(context.Background(), CreateConfig{}); err == nil {
		t.Fatal("empty config accepted")
	}
}

// TestCreateBody checks the bodies --prompt-chars makes: a prompt of exactly
// the length asked for, no blank at its end, the rest as the default body;
// 0 is the default body and a length the API refuses is refused here.
func TestCreateBody(t *testing.T) {
	var def map[string]any
	if err := json.Unmarshal(DefaultCreateBody, &def); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 52, 53, 54, 1000, MaxPromptChars} {
		b, err := CreateBody(n)
		if err != nil {
			t.Fatalf("%d: %v", n, err)
		}
		var got map[string]any
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%d: %s: %v", n, b, err)
		}
		p, _ := got["prompt"].(string)
		if len(p) != n || strings.TrimSpace(p) != p || got["mode"] != def["mode"] || got["duration_seconds"] != def["duration_seconds"] {
			t.Fatalf("%d characters asked, body %s", n, b)
		}
	}
	if b, err := CreateBody(0); err != nil || !bytes.Equal(b, DefaultCreateBody) {
		t.Fatalf("0: %s, %v; want the default body", b, err)
	}
	for _, n := range []int{-1, MaxPromptChars + 1} {
		if _, err := CreateBody(n); err == nil {
			t.Fatalf("%d characters: no error", n)
		}
	}
}
