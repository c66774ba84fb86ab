package main

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// chaosRefund is a failed video's refund, for the linearizability check.
type chaosRefund struct {
	account string
	cost    int64
	call    int64 // when its create was first tried
}

// chaosFinals is what the check of the videos leaves for the history check.
type chaosFinals struct {
	refunds []chaosRefund
	balance map[string]int64 // account -> final balance
}

// chaosGet reads path with key through the first node that answers 200.
func chaosGet(t *testing.T, c *chaosCluster, key, path string) map[string]any {
	t.Helper()
	var body map[string]any
	eventually(t, 30*time.Second, "GET "+path, func() bool {
		for _, n := range c.up() {
			if a := chaosDo(http.MethodGet, n.publicURL()+path, key, ""); a.err == nil && a.status == http.StatusOK {
				body = a.body
				return true
			}
		}
		return false
	})
	return body
}

// checkChaosVideos waits until every video of the loaded accounts has
// finished, then checks them against what the clients were told and what the
// webhook receiver got.
func checkChaosVideos(t *testing.T, c *chaosCluster, accts []chaosAccount, rec *chaosRecorder, hooks *chaosHooks) chaosFinals {
	t.Helper()
	finals := chaosFinals{balance: map[string]int64{}}
	rec.mu.Lock()
	acks := rec.acks
	calls := rec.calls
	rec.mu.Unlock()
	var finished []map[string]any
	for _, a := range accts {
		var videos []any
		eventually(t, 5*time.Minute, "every video of "+a.id+" to finish", func() bool {
			list := chaosGet(t, c, a.key, "/v1/videos?limit=100")
			if num(list, "total") > 100 {
				t.Fatalf("%v videos: more than one page", list["total"])
			}
			videos, _ = list["data"].([]any)
			for _, v := range videos {
				if s := v.(map[string]any)["status"]; s != "completed" && s != "failed" {
					return false
				}
			}
			return true
		})
		byPrompt := map[string]string{}
		var charged, refunded int64
		for _, x := range videos {
			v := x.(map[string]any)
			prompt, _ := v["prompt"].(string)
			id, _ := v["id"].(string)
			if other, dup := byPrompt[prompt]; dup {
				t.Errorf("prompt %q made two videos, %s and %s", prompt, other, id)
			}
			byPrompt[prompt] = id
			charged += int64(num(v, "credits_charged"))
			if v["status"] == "failed" {
				e, _ := v["error"].(map[string]any)
				if e["credits_refunded"] != true {
					t.Errorf("failed video %s was not refunded: %v", id, v)
				}
				refunded += int64(num(v, "credits_charged"))
				finals.refunds = append(finals.refunds, chaosRefund{account: a.id, cost: int64(num(v, "credits_charged")), call: calls[prompt]})
			}
			finished = append(finished, v)
		}
		acked := 0
		for _, ack := range acks {
			if ack.account != a.id {
				continue
			}
			acked++
			if got := byPrompt[ack.prompt]; got != ack.video {
				t.Errorf("create %q was acknowledged as %s, the account holds %q", ack.prompt, ack.video, got)
			}
		}
		balance := int64(num(chaosGet(t, c, a.key, "/v1/me"), "credits"))
		finals.balance[a.id] = balance
		if chaosGrant != balance+charged-refunded {
			t.Errorf("account %s: granted %d ≠ balance %d + charged %d − refunded %d", a.id, chaosGrant, balance, charged, refunded)
		}
		t.Logf("account %s: %d videos (%d acknowledged creates), balance %d, charged %d, refunded %d",
			a.id, len(videos), acked, balance, charged, refunded)
	}
	for _, v := range finished {
		id, typ := v["id"].(string), "video."+v["status"].(string)
		eventually(t, 60*time.Second, fmt.Sprintf("the %s event of %s", typ, id), func() bool { return hooks.delivered(id, typ) })
	}
	hooks.mu.Lock()
	for _, b := range hooks.bad {
		t.Errorf("webhook delivery: %s", b)
	}
	hooks.mu.Unlock()
	return finals
}
