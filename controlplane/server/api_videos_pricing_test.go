package server_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestAPIPricing checks credits_charged and the balance for auto videos (3 credits
// per started 5 seconds) and manual videos (credits_per_second of the resolution
// times the duration, from the catalog), with the model's defaults filled in.
func TestAPIPricing(t *testing.T) {
	t.Parallel()
	h := start(t)
	const initial = 10000
	_, key := h.account("max", initial)
	balance := int64(initial)

	charge := func(t *testing.T, body map[string]any, want int64) map[string]any {
		t.Helper()
		v := h.create(key, body)
		if got := jsonInt(t, v["credits_charged"]); got != want {
			t.Fatalf("credits_charged = %d, want %d for %v", got, want, body)
		}
		if v["status"] != "queued" && v["status"] != "processing" {
			t.Fatalf("a paid video starts %v", v["status"])
		}
		if jsonInt(t, v["poll_interval_seconds"]) < 1 {
			t.Fatalf("poll_interval_seconds = %v", v["poll_interval_seconds"])
		}
		if !strings.HasPrefix(v["id"].(string), "vid_") || v["object"] != "video" {
			t.Fatalf("video answer: %v", v)
		}
		balance -= want
		if got := h.balance(key); got != balance {
			t.Fatalf("balance = %d after charging %d, want %d", got, want, balance)
		}
		g := expectAPIStatus(t, h.do("GET", "/v1/videos/"+v["id"].(string), key, nil), http.StatusOK)
		if jsonInt(t, g["credits_charged"]) != want {
			t.Fatalf("GET shows credits_charged %v, want %d", g["credits_charged"], want)
		}
		return v
	}

	t.Run("auto", func(t *testing.T) {
		for _, c := range []struct{ secs, credits int64 }{
			{5, 3}, {6, 6}, {10, 6}, {11, 9}, {30, 18}, {299, 180}, {300, 180},
		} {
			v := charge(t, autoReq("duration_seconds", c.secs), c.credits)
			if jsonInt(t, v["duration_seconds"]) != c.secs || v["mode"] != "auto" {
				t.Fatalf("auto %d s answered %v", c.secs, v)
			}
		}
	})

	t.Run("manual", func(t *testing.T) {
		for _, c := range []struct {
			model, res string
			secs       int64
		}{
			{"kling-2.1-master", "720p", 10},
			{"kling-2.1-master", "1080p", 5},
			{"luma-ray-2", "4k", 9},
			{"luma-ray-2", "540p", 5},
			{"seedance-1.5-pro", "480p", 12},
			{"vidu-q2-pro", "1080p", 8},
			{"sora-2-pro", "1080p", 12},
			{"ltx-video-13b", "720p", 8},
		} {
			m := catalogModel(t, c.model)
			want := int64(m.CreditsPerSecond[c.res]) * c.secs
			v := charge(t, manualReq("model", c.model, "resolution", c.res, "duration_seconds", c.secs), want)
			if v["model"] != c.model || v["resolution"] != c.res || jsonInt(t, v["duration_seconds"]) != c.secs {
				t.Fatalf("%s %s %d s answered %v", c.model, c.res, c.secs, v)
			}
		}
	})

	t.Run("defaults filled", func(t *testing.T) {
		for _, id := range []string{"kling-2.1-master", "veo-3", "seedance-1.0-lite", "sora-2"} {
			m := catalogModel(t, id)
			want := int64(m.CreditsPerSecond[m.DefaultResolution] * m.DefaultDuration)
			v := charge(t, manualReq("model", id), want)
			if v["resolution"] != m.DefaultResolution || jsonInt(t, v["duration_seconds"]) != int64(m.DefaultDuration) ||
				v["aspect_ratio"] != m.DefaultAspectRatio || v["operation"] != "text_to_video" {
				t.Fatalf("%s defaults: want %s %d s %s, got %v", id, m.DefaultResolution, m.DefaultDuration, m.DefaultAspectRatio, v)
			}
		}
		// No model at all: the default model with its defaults.
		v := h.create(key, manualReq())
		m := catalogModel(t, v["model"].(string))
		want := int64(m.CreditsPerSecond[m.DefaultResolution] * m.DefaultDuration)
		if jsonInt(t, v["credits_charged"]) != want || v["resolution"] != m.DefaultResolution {
			t.Fatalf("default model %s: %v", m.ID, v)
		}
		balance -= want
		// Auto without duration gets a default duration priced by the auto rule.
		a := h.create(key, autoReq())
		secs := jsonInt(t, a["duration_seconds"])
		if secs < 5 || secs > 300 || jsonInt(t, a["credits_charged"]) != (secs+4)/5*3 {
			t.Fatalf("auto default: %v", a)
		}
		balance -= jsonInt(t, a["credits_charged"])
		if h.balance(key) != balance {
			t.Fatalf("balance %d, want %d", h.balance(key), balance)
		}
	})
}

// TestAPIInsufficientCredits checks the 402: its details and link, and that
// nothing is charged or created.
func TestAPIInsufficientCredits(t *testing.T) {
	t.Parallel()
	h := start(t)
	_, key := h.account("pro", 20)
	h.create(key, autoReq("duration_seconds", 10)) // 6 credits, 14 left
	for _, c := range []struct {
		body     map[string]any
		required int64
	}{
		{autoReq("duration_seconds", 30), 18},
		{autoReq("duration_seconds", 300), 180},
		{manualReq("model", "sora-2-pro", "resolution", "1080p", "duration_seconds", 4), 200},
		{manualReq("model", "kling-2.1-master"), 140},
	} {
		r := h.do("POST", "/v1/videos", key, c.body)
		e := expectAPIError(t, r, http.StatusPaymentRequired, "insufficient_credits")
		d := errDetails(t, e)
		if jsonInt(t, d["required_credits"]) != c.required || jsonInt(t, d["remaining_credits"]) != 14 {
			t.Fatalf("details = %v, want required %d remaining 14", d, c.required)
		}
		if u, _ := errLinks(t, e)["buy_credits"].(string); !strings.HasPrefix(u, "https://") {
			t.Fatalf("links.buy_credits = %v", errLinks(t, e)["buy_credits"])
		}
		if h.balance(key) != 14 || h.total(key) != 1 {
			t.Fatalf("a 402 changed the balance (%d) or created a video (total %d)", h.balance(key), h.total(key))
		}
	}
	// Exactly enough is enough and leaves zero; one credit short is not.
	h.create(key, autoReq("duration_seconds", 20)) // 12, 2 left
	e := expectAPIError(t, h.do("POST", "/v1/videos", key, autoReq("duration_seconds", 5)), http.StatusPaymentRequired, "insufficient_credits")
	if d := errDetails(t, e); jsonInt(t, d["required_credits"]) != 3 || jsonInt(t, d["remaining_credits"]) != 2 {
		t.Fatalf("details = %v", d)
	}
	_, exact := h.account("max", 3)
	h.create(exact, autoReq("duration_seconds", 5))
	if h.balance(exact) != 0 {
		t.Fatalf("balance after spending exactly all: %d", h.balance(exact))
	}
	expectAPIError(t, h.do("POST", "/v1/videos", exact, autoReq("duration_seconds", 5)), http.StatusPaymentRequired, "insufficient_credits")
	if h.total(exact) != 1 || h.total(key) != 2 {
		t.Fatalf("totals %d and %d", h.total(exact), h.total(key))
	}
}

// TestAPIConcurrentChargesNeverOverdraw races paid creates against a balance that
// covers only some of them: exactly that many succeed and the balance ends at zero.
func TestAPIConcurrentChargesNeverOverdraw(t *testing.T) {
	t.Parallel()
	h := start(t)
	acct, key := h.account("pro", 15) // five 5-second auto videos
	_, key2 := h.newKey(acct)
	var keys []string
	for i := 0; i < 6; i++ {
		keys = append(keys, key, key2)
	}
	statuses, codes := h.concurrently(keys, autoReq("duration_seconds", 5))
	created := 0
	for i, s := range statuses {
		switch {
		case s == http.StatusCreated:
			created++
		case s == http.StatusPaymentRequired && codes[i] == "insufficient_credits":
		default:
			t.Fatalf("concurrent create: %d %s", s, codes[i])
		}
	}
	if created != 5 || h.balance(key) != 0 || h.total(key) != 5 {
		t.Fatalf("created %d, balance %d, total %d; want 5, 0, 5", created, h.balance(key), h.total(key))
	}
}
