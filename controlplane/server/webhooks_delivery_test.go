package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/controlplane/server"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

// An endpoint that is down gets the event again 1 min, 5 min, 30 min, 2 h and
// 6 h after each failed attempt, always the same evt_ id, each attempt signed
// and recorded; once it answers 2xx it never gets that event again.
func TestWebhookRetriesOnScheduleUntilAcknowledged(t *testing.T) {
	for _, tc := range []struct {
		name     string
		failures []int // the receiver's answers before it acknowledges
		want     string
	}{
		{"down five times then up", []int{503, 500, http.StatusFound, 404, 429}, fsm.DeliveryDelivered},
		{"never up", []int{503, 503, 503, 503, 503, 503}, fsm.DeliveryAbandoned},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock()
			h := start(t, withWebhooks(clock))
			_, key := h.account("pro", 1000)
			rc := newReceiver(t, func(n int) int {
				if n <= len(tc.failures) {
					return tc.failures[n-1]
				}
				return http.StatusNoContent
			})
			_, secret := h.registerWebhook(key, rc.srv.URL+"/hook")
			vid := h.failedVideo(key)
			evt := fsm.EventID(vid)

			t0 := clock.Now()
			got := rc.waitFor(1)
			checkSigned(t, got[0], secret, t0)
			at := t0
			attempts := min(len(tc.failures)+1, len(fsm.RetrySchedule)+1)
			for i := 1; i < attempts; i++ {
				step := fsm.RetrySchedule[i-1]
				eventually(t, func() bool { ds := h.deliveriesOf(evt); return len(ds) == 1 && len(ds[0].Attempts) == i },
					"attempt %d to be recorded", i)
				d := h.deliveriesOf(evt)[0]
				if d.State != fsm.DeliveryPending || d.NextAttemptAt == nil || !d.NextAttemptAt.Equal(at.Add(step)) {
					t.Fatalf("after attempt %d: state %s, next %v, want %v", i, d.State, d.NextAttemptAt, at.Add(step))
				}
				if n := len(rc.deliveries()); n != i {
					t.Fatalf("the receiver got %d requests before the retry was due, want %d", n, i)
				}
				at = at.Add(step)
				clock.Set(at)
				got = rc.waitFor(i + 1)
				ev := checkSigned(t, got[i], secret, at)
				if ev["id"] != evt || ev["type"] != fsm.EventVideoFailed {
					t.Fatalf("retry %d carries %v %v, want %s video.failed", i, ev["id"], ev["type"], evt)
				}
				if string(got[i].Body) != string(got[0].Body) {
					t.Fatalf("retry %d body differs from the first:\n%s\n%s", i, got[i].Body, got[0].Body)
				}
			}
			eventually(t, func() bool { return h.deliveriesOf(evt)[0].State == tc.want }, "delivery to end %s", tc.want)
			d := h.deliveriesOf(evt)[0]
			if len(d.Attempts) != attempts || d.Attempts[0].Status != tc.failures[0] || d.Attempts[0].Error == "" {
				t.Fatalf("recorded attempts: %+v", d.Attempts)
			}
			for i := 1; i < len(d.Attempts); i++ {
				if gap := d.Attempts[i].At.Sub(d.Attempts[i-1].At); gap != fsm.RetrySchedule[i-1] {
					t.Fatalf("attempt %d came %s after the one before, want %s", i+1, gap, fsm.RetrySchedule[i-1])
				}
			}
			// A day later a second event goes out; the first one is not sent again.
			clock.Set(at.Add(24 * time.Hour))
			second := fsm.EventID(h.failedVideo(key))
			got = rc.waitFor(attempts + 1)
			if len(got) != attempts+1 || got[attempts].Event["id"] != second {
				t.Fatalf("after the end: %d requests, last %v; want %d, the last %s", len(got), got[len(got)-1].Event["id"], attempts+1, second)
			}
		})
	}
}

// The outbox lives in the replicated state: a node restarted between two
// attempts makes the next one on time, with the same event.
func TestWebhookRetryAfterRestart(t *testing.T) {
	clock := newFakeClock()
	h := start(t, withWebhooks(clock))
	_, key := h.account("pro", 1000)
	rc, secret, evt := firstAttemptFails(t, h, h, key)

	h.restart()
	next := clock.Now().Add(fsm.RetrySchedule[0])
	clock.Set(next)
	got := rc.waitFor(2)
	if ev := checkSigned(t, got[1], secret, next); ev["id"] != evt {
		t.Fatalf("after the restart the receiver got %v, want %s", ev["id"], evt)
	}
	eventually(t, func() bool { return h.deliveriesOf(evt)[0].State == fsm.DeliveryDelivered }, "the delivery to be done")
}

// Deleting an endpoint while its delivery waits for a retry cancels it.
func TestWebhookDeletedMidRetry(t *testing.T) {
	clock := newFakeClock()
	h := start(t, withWebhooks(clock))
	_, key := h.account("pro", 1000)
	down := newReceiver(t, func(int) int { return http.StatusServiceUnavailable })
	up := newReceiver(t, func(int) int { return http.StatusOK })
	doomed, _ := h.registerWebhook(key, down.srv.URL)
	evt := fsm.EventID(h.failedVideo(key))
	down.waitFor(1)
	eventually(t, func() bool { return len(h.deliveriesOf(evt)[0].Attempts) == 1 }, "the first attempt to be recorded")

	expectAPIStatus(t, h.do("DELETE", "/v1/webhooks/"+doomed, key, nil), http.StatusOK)
	if d := h.deliveriesOf(evt)[0]; d.State != fsm.DeliveryCancelled || d.NextAttemptAt != nil {
		t.Fatalf("delivery after deleting its endpoint: %+v", d)
	}
	h.registerWebhook(key, up.srv.URL)
	clock.Set(clock.Now().Add(7 * time.Hour)) // past every retry of the schedule
	sentinel := fsm.EventID(h.failedVideo(key))
	if got := up.waitFor(1); got[0].Event["id"] != sentinel {
		t.Fatalf("the live endpoint got %v, want %s", got[0].Event["id"], sentinel)
	}
	if n := len(down.deliveries()); n != 1 {
		t.Fatalf("the deleted endpoint got %d requests, want 1", n)
	}
}

// An endpoint subscribed only to video.failed gets failures, not completions;
// an endpoint with the default gets both, and a completion carries the video
// object with a working video_url.
func TestWebhookEventFilterAndCompletedVideo(t *testing.T) {
	clock := newFakeClock()
	h := start(t, withWebhooks(clock), withAgent(30*time.Second))
	_, key := h.account("pro", 1000)
	failedOnly := newReceiver(t, func(int) int { return http.StatusOK })
	both := newReceiver(t, func(int) int { return http.StatusOK })
	h.registerWebhook(key, failedOnly.srv.URL, fsm.EventVideoFailed)
	_, secret := h.registerWebhook(key, both.srv.URL)

	cred := h.registerNode("gpu-1")
	vid := expectAPIStatus(t, h.do("POST", "/v1/videos", key, manualReq("duration_seconds", 5)), http.StatusCreated)["id"].(string)
	h.runTask(cred, h.leaseTask(cred, 5), "clip.mp4")
	h.runTask(cred, h.leaseTask(cred, 5), wire.ArtifactVideo, wire.ArtifactPoster)

	got := both.waitFor(1)
	ev := checkSigned(t, got[0], secret, clock.Now())
	video, _ := ev["data"].(map[string]any)["video"].(map[string]any)
	if ev["id"] != fsm.EventID(vid) || ev["type"] != fsm.EventVideoCompleted || video["id"] != vid || video["status"] != "completed" {
		t.Fatalf("completion event: %s", got[0].Body)
	}
	if r := h.get(video["video_url"].(string)); r.Status != http.StatusOK || string(r.Body) != "bytes of videos/"+vid+"/finalize/video.mp4" {
		t.Fatalf("the event's video_url: %d %q", r.Status, r.Body)
	}
	failed := fsm.EventID(h.failedVideo(key))
	for _, rc := range []*receiver{both, failedOnly} {
		eventually(t, func() bool {
			ds := rc.deliveries()
			return len(ds) > 0 && ds[len(ds)-1].Event["id"] == failed
		}, "the failure to reach every subscriber")
	}
	if got := failedOnly.deliveries(); len(got) != 1 {
		t.Fatalf("the video.failed subscriber got %d events, want only the failure", len(got))
	}
}

// rebinding resolves hooks.example.test to a public address until flipped, then
// to loopback: DNS rebinding after registration.
type rebinding struct {
	mu      sync.Mutex
	private bool
}

func (r *rebinding) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if host != "hooks.example.test" {
		return nil, fmt.Errorf("no such host %s", host)
	}
	if r.private {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	return []netip.Addr{netip.MustParseAddr("93.184.215.14")}, nil
}

// A name that resolves to a public address at registration and to loopback when
// the deliverer connects is never connected to: the attempt fails with the
// reason and is retried on schedule like any other failure.
func TestWebhookNameRebindingRefusedAtConnect(t *testing.T) {
	clock := newFakeClock()
	dns := &rebinding{}
	h := start(t, func(c *server.Config) { c.WebhookClock, c.WebhookResolver = clock, dns })
	_, key := h.account("pro", 1000)
	h.registerWebhook(key, "https://hooks.example.test/in")
	dns.mu.Lock()
	dns.private = true
	dns.mu.Unlock()
	expectAPIError(t, h.do("POST", "/v1/webhooks", key, map[string]any{"url": "https://hooks.example.test/in"}),
		http.StatusBadRequest, "invalid_url")

	evt := fsm.EventID(h.failedVideo(key))
	eventually(t, func() bool { return len(h.deliveriesOf(evt)[0].Attempts) == 1 }, "the attempt to be recorded")
	d := h.deliveriesOf(evt)[0]
	if a := d.Attempts[0]; a.Status != 0 || !strings.Contains(a.Error, "loopback address") || d.State != fsm.DeliveryPending {
		t.Fatalf("attempt on a name now resolving to loopback: %+v (state %s)", a, d.State)
	}
}

// Three nodes; the leader makes the first attempt and goes away; the new leader
// makes the next one on schedule, with the same event, from the replicated outbox.
func TestWebhookCarriesOnAfterLeaderFailover(t *testing.T) {
	clock := newFakeClock()
	blobs := t.TempDir()
	n1 := start(t, withWebhooks(clock), func(c *server.Config) { c.NodeID, c.BlobDir = "n1", blobs })
	join := func(id string) option {
		return func(c *server.Config) { c.NodeID, c.BlobDir, c.Join = id, blobs, "http://"+n1.srv.AdminAddr() }
	}
	n2 := start(t, withWebhooks(clock), join("n2"))
	start(t, withWebhooks(clock), join("n3"))
	_, key := n1.account("pro", 1000)
	rc, secret, evt := firstAttemptFails(t, n1, n2, key)

	n1.stop()
	eventually(t, func() bool {
		m, err := n2.admin.ClusterMembers(context.Background())
		return err == nil && (m.Leader == "n2" || m.Leader == "n3")
	}, "a new leader to be elected")
	next := clock.Now().Add(fsm.RetrySchedule[0])
	clock.Set(next)
	got := rc.waitFor(2)
	if ev := checkSigned(t, got[1], secret, next); ev["id"] != evt {
		t.Fatalf("the new leader sent %v, want %s", ev["id"], evt)
	}
	eventually(t, func() bool { return n2.deliveriesOf(evt)[0].State == fsm.DeliveryDelivered }, "the delivery to be done")
	if n := len(rc.deliveries()); n != 2 {
		t.Fatalf("the receiver got %d requests, want 2", n)
	}
}

// firstAttemptFails registers, through h, a receiver that answers 503 once and
// 200 after, fails a video of the account, and waits until reader shows the
// first attempt recorded. It returns the receiver, the secret and the event id.
func firstAttemptFails(t *testing.T, h, reader *harness, key string) (*receiver, string, string) {
	t.Helper()
	rc := newReceiver(t, func(n int) int {
		if n == 1 {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	_, secret := h.registerWebhook(key, rc.srv.URL)
	evt := fsm.EventID(h.failedVideo(key))
	rc.waitFor(1)
	eventually(t, func() bool { ds := reader.deliveriesOf(evt); return len(ds) == 1 && len(ds[0].Attempts) == 1 },
		"the first attempt to be recorded")
	return rc, secret, evt
}

// TestWebhookDeliveriesAPI reads an endpoint's delivery history over HTTP
// while a delivery is retried and after it is acknowledged.
func TestWebhookDeliveriesAPI(t *testing.T) {
	clock := newFakeClock()
	h := start(t, withWebhooks(clock))
	_, key := h.account("pro", 1000)
	_, otherKey := h.account("pro", 1000)
	rc := newReceiver(t, func(n int) int {
		if n == 1 {
			return http.StatusServiceUnavailable
		}
		return http.StatusNoContent
	})
	whk, _ := h.registerWebhook(key, rc.srv.URL+"/hook")
	vid := h.failedVideo(key)
	evt := fsm.EventID(vid)
	rc.waitFor(1)
	path := "/v1/webhooks/" + whk + "/deliveries"
	var d map[string]any
	eventually(t, func() bool {
		data := expectAPIStatus(t, h.do("GET", path, key, nil), http.StatusOK)["data"].([]any)
		if len(data) != 1 {
			return false
		}
		d = data[0].(map[string]any)
		return len(d["attempts"].([]any)) == 1
	}, "the first attempt to be listed")
	a := d["attempts"].([]any)[0].(map[string]any)
	if d["id"] != evt+"."+whk || d["event_id"] != evt || d["event_type"] != fsm.EventVideoFailed || d["status"] != "pending" ||
		jsonInt(t, a["response_status"]) != 503 || d["next_retry_at"] == nil || d["finished_at"] != nil {
		t.Fatalf("pending delivery %v", d)
	}
	if jsonInt(t, d["next_retry_at"]) != jsonInt(t, a["attempted_at"])+int64(fsm.RetrySchedule[0].Seconds()) {
		t.Fatalf("next_retry_at %v, want the attempt plus %s", d["next_retry_at"], fsm.RetrySchedule[0])
	}
	clock.Set(clock.Now().Add(fsm.RetrySchedule[0]))
	rc.waitFor(2)
	eventually(t, func() bool {
		data := expectAPIStatus(t, h.do("GET", path, key, nil), http.StatusOK)["data"].([]any)
		d = data[0].(map[string]any)
		return d["status"] == "delivered"
	}, "the delivery to be listed as delivered")
	if len(d["attempts"].([]any)) != 2 || d["finished_at"] == nil || d["next_retry_at"] != nil {
		t.Fatalf("delivered %v", d)
	}
	// A second event lists first; paging goes on to the first.
	second := fsm.EventID(h.failedVideo(key))
	rc.waitFor(3)
	page := expectAPIStatus(t, h.do("GET", path+"?limit=1", key, nil), http.StatusOK)
	data := page["data"].([]any)
	if len(data) != 1 || data[0].(map[string]any)["event_id"] != second || page["has_more"] != true {
		t.Fatalf("first page %v", page)
	}
	rest := expectAPIStatus(t, h.do("GET", path+"?limit=1&starting_after="+second+"."+whk, key, nil), http.StatusOK)
	if data := rest["data"].([]any); len(data) != 1 || data[0].(map[string]any)["event_id"] != evt || rest["has_more"] != false {
		t.Fatalf("second page %v", rest)
	}
	expectAPIError(t, h.do("GET", path, otherKey, nil), http.StatusNotFound, "not_found")

	// The first delivery, delivered, is sent again on request.
	retry := path + "/" + evt + "." + whk + "/retry"
	expectAPIError(t, h.do("POST", retry, otherKey, nil), http.StatusNotFound, "not_found")
	expectAPIError(t, h.do("POST", path+"/evt_none."+whk+"/retry", key, nil), http.StatusNotFound, "not_found")
	r := expectAPIStatus(t, h.do("POST", retry, key, nil), http.StatusOK)
	if r["status"] != "pending" || len(r["attempts"].([]any)) != 2 || r["event_type"] != fsm.EventVideoFailed {
		t.Fatalf("retried delivery %v", r)
	}
	if got := rc.waitFor(4); got[3].Event["id"] != evt {
		t.Fatalf("the retry sent %v, want %s", got[3].Event["id"], evt)
	}
	eventually(t, func() bool {
		data := expectAPIStatus(t, h.do("GET", path+"?limit=1&starting_after="+second+"."+whk, key, nil), http.StatusOK)["data"].([]any)
		d = data[0].(map[string]any)
		return d["status"] == "delivered" && len(d["attempts"].([]any)) == 3
	}, "the retried delivery to be delivered with three attempts")
}
