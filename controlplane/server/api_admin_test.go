package server_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/vidfarm/vidfarm/controlplane/admin"
	"github.com/vidfarm/vidfarm/controlplane/apierr"
)

// TestAPIAdminFailRefund fails paid videos through the admin API and checks what
// the client sees: status failed, the error object, and the exact refund.
func TestAPIAdminFailRefund(t *testing.T) {
	t.Parallel()
	h := start(t)
	ctx := context.Background()
	_, key := h.account("pro", 500)

	manualVid := h.create(key, manualReq("model", "kling-2.1-master", "resolution", "720p", "duration_seconds", 10)) // 200
	autoVid := h.create(key, autoReq("duration_seconds", 31))                                                        // 21
	if h.balance(key) != 279 {
		t.Fatalf("balance %d, want 279", h.balance(key))
	}

	for _, c := range []struct {
		id       string
		charged  int64
		balance  int64
		reason   string
		wantText string
	}{
		{manualVid["id"].(string), 200, 479, "GPU node lost", "GPU node lost"},
		{autoVid["id"].(string), 21, 500, "", ""},
	} {
		out, err := h.admin.FailVideo(ctx, c.id, c.reason)
		if err != nil {
			t.Fatalf("fail %s: %v", c.id, err)
		}
		if out.Status != "failed" || !out.CreditsRefunded || out.Refunded != c.charged {
			t.Fatalf("admin answer: %+v", out)
		}
		v := expectAPIStatus(t, h.do("GET", "/v1/videos/"+c.id, key, nil), http.StatusOK)
		e, ok := v["error"].(map[string]any)
		if v["status"] != "failed" || !ok || e["credits_refunded"] != true {
			t.Fatalf("failed video: %v", v)
		}
		if msg, _ := e["message"].(string); strings.TrimSpace(msg) == "" || !strings.Contains(msg, c.wantText) {
			t.Fatalf("error.message = %q, want it to say %q", msg, c.wantText)
		}
		if v["progress"] != nil || v["video_url"] != nil {
			t.Fatalf("a failed video carries progress or video_url: %v", v)
		}
		if jsonInt(t, v["credits_charged"]) != c.charged {
			t.Fatalf("credits_charged of a failed video changed: %v", v["credits_charged"])
		}
		if got := h.balance(key); got != c.balance {
			t.Fatalf("balance after refund %d, want %d", got, c.balance)
		}
		// Failing it again (a retried command) answers the same outcome
		// and refunds nothing more.
		again, err := h.admin.FailVideo(ctx, c.id, "again")
		if err != nil || again != out {
			t.Fatalf("second fail: %+v, %v; want %+v", again, err, out)
		}
		if got := h.balance(key); got != c.balance {
			t.Fatalf("second fail changed the balance to %d", got)
		}
	}

	// A preview is not rendering, so it cannot fail; an unknown video is 404.
	_, freeKey := h.account("free", 0)
	pv := h.create(freeKey, autoReq())
	var ae *apierr.Error
	if _, err := h.admin.FailVideo(ctx, pv["id"].(string), "x"); !errors.As(err, &ae) || ae.Status != http.StatusBadRequest {
		t.Fatalf("failing a preview: %v", err)
	}
	if _, err := h.admin.FailVideo(ctx, "vid_nope", "x"); !errors.As(err, &ae) || ae.Status != http.StatusNotFound {
		t.Fatalf("failing an unknown video: %v", err)
	}
}

// TestAPIAdminAuthAndAccounts covers the admin token and account_not_found.
func TestAPIAdminAuthAndAccounts(t *testing.T) {
	t.Parallel()
	h := start(t)
	ctx := context.Background()
	acct, _ := h.account("pro", 1)

	for _, tok := range []string{"", "wrong-token", "test-admin-token-but-longer"} {
		c := &admin.Client{Server: h.admin.Server, Token: tok}
		_, err := c.Account(ctx, acct)
		var ae *apierr.Error
		if !errors.As(err, &ae) || ae.Status != http.StatusUnauthorized || ae.Code != "unauthorized" {
			t.Fatalf("token %q: want 401, got %v", tok, err)
		}
		if !strings.HasPrefix(ae.RequestID, "req_") {
			t.Fatalf("admin error without request_id: %+v", ae)
		}
		if _, err := c.GrantCredits(ctx, acct, 1000); !errors.As(err, &ae) || ae.Status != http.StatusUnauthorized {
			t.Fatalf("grant with token %q: %v", tok, err)
		}
	}
	// The raw endpoint without any header, and the public key is no admin token.
	_, key := h.account("max", 0)
	for _, hdr := range [][]string{nil, {"Authorization", "Bearer " + key}} {
		req, err := http.NewRequest("GET", h.admin.Server+"/admin/v1/accounts/"+acct, nil)
		if err != nil {
			t.Fatal(err)
		}
		if hdr != nil {
			req.Header.Set(hdr[0], hdr[1])
		}
		expectAPIError(t, h.send(req), http.StatusUnauthorized, "unauthorized")
	}
	if a, err := h.admin.Account(ctx, acct); err != nil || a.Credits != 1 {
		t.Fatalf("failed calls changed the account: %+v %v", a, err)
	}

	var ae *apierr.Error
	if _, err := h.admin.GrantCredits(ctx, "acct_nope", 10); !errors.As(err, &ae) || ae.Code != "account_not_found" {
		t.Fatalf("grant to unknown account: %v", err)
	}
	if _, err := h.admin.SetPlan(ctx, "acct_nope", "pro"); !errors.As(err, &ae) || ae.Code != "account_not_found" {
		t.Fatalf("plan set of unknown account: %v", err)
	}
	if _, err := h.admin.Account(ctx, "acct_nope"); !errors.As(err, &ae) || ae.Code != "account_not_found" {
		t.Fatalf("get unknown account: %v", err)
	}
	if _, err := h.admin.SetPlan(ctx, acct, "platinum"); !errors.As(err, &ae) || ae.Status != http.StatusBadRequest {
		t.Fatalf("unknown plan: %v", err)
	}
	if _, err := h.admin.GrantCredits(ctx, acct, -5); !errors.As(err, &ae) || ae.Status != http.StatusBadRequest {
		t.Fatalf("negative grant: %v", err)
	}
}
