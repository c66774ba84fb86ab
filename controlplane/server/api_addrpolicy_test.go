package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/vidfarm/vidfarm/controlplane/server"
)

// addrTable is netguard/testdata/urls.json: the refused and accepted URLs
// every entry point that takes a URL is tested with, and the DNS answers
// they assume.
type addrTable struct {
	DNS      map[string][]string `json:"dns"`
	Refused  [][2]string         `json:"refused"`
	Accepted []string            `json:"accepted"`
}

// LookupNetIP answers from the table's DNS, for webhook and client URLs alike.
func (a addrTable) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	var out []netip.Addr
	for _, s := range a.DNS[strings.TrimSuffix(strings.ToLower(host), ".")] {
		out = append(out, netip.MustParseAddr(s))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no such host %s", host)
	}
	return out, nil
}

// urlEntry is one place of the API that takes a URL: body puts u in a
// request, field is the details.field a refusal names.
type urlEntry struct {
	name, path, field string
	body              func(u string) map[string]any
}

func urlEntries() []urlEntry {
	const public = "https://images.example.com/public.png"
	return []urlEntry{
		{"webhook", "/v1/webhooks", "url", func(u string) map[string]any { return map[string]any{"url": u} }},
		{"image_url", "/v1/videos", "image_url", func(u string) map[string]any {
			return manualReq("model", "wan-2.2-a14b", "image_url", u)
		}},
		{"first_frame_url", "/v1/videos", "first_frame_url", func(u string) map[string]any {
			return manualReq("model", "kling-2.5-turbo-pro", "first_frame_url", u, "last_frame_url", public)
		}},
		{"last_frame_url", "/v1/videos", "last_frame_url", func(u string) map[string]any {
			return manualReq("model", "kling-2.5-turbo-pro", "first_frame_url", public, "last_frame_url", u)
		}},
		{"image_urls", "/v1/videos", "image_urls", func(u string) map[string]any {
			return manualReq("model", "vidu-q1", "image_urls", []string{public, u})
		}},
		{"logo_url", "/v1/brand-kits", "logo_url", func(u string) map[string]any { return map[string]any{"name": "Acme", "logo_url": u} }},
		{"brand from-url", "/v1/brand-kits/from-url", "url", func(u string) map[string]any { return map[string]any{"url": u} }},
		{"avatar file_url", "/v1/avatars", "file_url", func(u string) map[string]any { return photoAvatarReq("file_url", u) }},
	}
}

// TestAddressPolicyAtEveryEntryPoint sends netguard's whole table of refused
// URLs to every API entry point that takes a URL: each refuses each with 400
// invalid_url naming its field and the policy's reason, and nothing is
// created or charged. Then each accepts the table's public address (the
// brand from-url page excepted: accepting it means fetching it from the
// internet; netguard's tests cover it with an injected resolver).
func TestAddressPolicyAtEveryEntryPoint(t *testing.T) {
	var table addrTable
	raw, err := os.ReadFile("../../netguard/testdata/urls.json")
	if err == nil {
		err = json.Unmarshal(raw, &table)
	}
	if err != nil {
		t.Fatal(err)
	}
	h := start(t, func(c *server.Config) { c.WebhookResolver, c.ClientResolver = table, table })
	_, key := h.account("pro", 100000)
	characters := func() int64 {
		return jsonInt(t, expectAPIStatus(t, h.do("GET", "/v1/avatars?view=characters", key, nil), http.StatusOK)["total"])
	}
	avatarsBefore := characters()

	for _, ep := range urlEntries() {
		t.Run(ep.name, func(t *testing.T) {
			for _, c := range table.Refused {
				u, want := c[0], c[1]
				r := h.do("POST", ep.path, key, ep.body(u))
				if r.Status != http.StatusBadRequest || r.errorCode(t) != "invalid_url" {
					t.Errorf("%s: %d %s, want 400 invalid_url", u, r.Status, r.Body)
					continue
				}
				d := errDetails(t, expectAPIError(t, r, http.StatusBadRequest, "invalid_url"))
				if reason, _ := d["reason"].(string); d["field"] != ep.field || !strings.Contains(reason, want) {
					t.Errorf("%s: details %v, want field %q and a reason mentioning %q", u, d, ep.field, want)
				}
			}
		})
	}
	if n := h.total(key); n != 0 {
		t.Fatalf("refused requests created %d videos", n)
	}
	if b := h.balance(key); b != 100000 {
		t.Fatalf("refused requests charged %d credits", 100000-b)
	}
	if l := expectAPIStatus(t, h.do("GET", "/v1/webhooks", key, nil), http.StatusOK); len(l["data"].([]any)) != 0 {
		t.Fatalf("refused webhooks were registered: %v", l)
	}
	if l := expectAPIStatus(t, h.do("GET", "/v1/brand-kits", key, nil), http.StatusOK); jsonInt(t, l["total"]) != 0 {
		t.Fatalf("refused brand kits were saved: %v", l)
	}
	if n := characters(); n != avatarsBefore {
		t.Fatalf("refused avatars were created: %d characters, %d before", n, avatarsBefore)
	}

	public := table.Accepted[0]
	for _, ep := range urlEntries() {
		if ep.name == "brand from-url" {
			continue
		}
		r := expectAPIStatus(t, h.do("POST", ep.path, key, ep.body(public)), http.StatusCreated)
		if ep.name == "webhook" { // no deliveries towards the internet
			expectAPIStatus(t, h.do("DELETE", "/v1/webhooks/"+r["id"].(string), key, nil), http.StatusOK)
		}
	}
	if n := h.total(key); n != 4 {
		t.Fatalf("%d videos after four accepted creates", n)
	}
}

// flakyDNS fails the lookups of flakyHost the way a resolver that timed out
// does; other names (an entry point's other addresses) resolve to a public
// address.
type flakyDNS struct{}

const flakyHost = "cdn.example.org"

func (flakyDNS) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if host == flakyHost {
		return nil, &net.DNSError{Err: "i/o timeout", Name: host, IsTimeout: true, IsTemporary: true}
	}
	return []netip.Addr{netip.MustParseAddr("93.184.215.14")}, nil
}

// TestLookupFailureAtEveryEntryPoint: when the farm's resolver fails for a
// while, an address is not the client's fault: every entry point that takes
// a URL answers a retryable upstream_error naming the field, not a permanent
// invalid_url, and creates nothing.
func TestLookupFailureAtEveryEntryPoint(t *testing.T) {
	h := start(t, func(c *server.Config) { c.WebhookResolver, c.ClientResolver = flakyDNS{}, flakyDNS{} })
	_, key := h.account("pro", 100000)
	for _, ep := range urlEntries() {
		t.Run(ep.name, func(t *testing.T) {
			r := h.do("POST", ep.path, key, ep.body("https://"+flakyHost+"/a.png"))
			if r.Status < 500 || r.errorCode(t) != "upstream_error" {
				t.Fatalf("%d %s, want a 5xx upstream_error", r.Status, r.Body)
			}
			e := expectAPIError(t, r, r.Status, "upstream_error")
			if e["retryable"] != true {
				t.Fatalf("not retryable: %v", e)
			}
			if d := errDetails(t, e); ep.name != "brand from-url" && d["field"] != ep.field {
				t.Fatalf("details %v, want field %q", d, ep.field)
			}
		})
	}
	if n, b := h.total(key), h.balance(key); n != 0 || b != 100000 {
		t.Fatalf("failed lookups created %d videos and charged %d credits", n, 100000-b)
	}
}
