package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/api"
	"github.com/vidfarm/vidfarm/controlplane/console"
	"github.com/vidfarm/vidfarm/controlplane/server"
	"github.com/vidfarm/vidfarm/models"
)

// TestAccountsPages checks the accounts pages over real HTTP against a real
// node: the list (search, pages in id order), one account's plan, balance,
// videos by status, credits spent today (what its videos cost) and the 429s
// its API key got; a session is required.
func TestAccountsPages(t *testing.T) {
	// A key may make 4 requests an hour: the 5th and 6th are refused.
	f := startFarm(t, func(c *server.Config) { c.Limits = api.Limits{PerKey: []api.Rate{{Tokens: 4, Interval: time.Hour}}} })
	ctx := context.Background()
	shop, err := f.admin.CreateAccount(ctx, "Fox Films", "pro", 100_000)
	must(t, err, "create account")
	other, err := f.admin.CreateAccount(ctx, "Other Shop", "free", 50)
	must(t, err, "create account")
	model := models.IDs()[0]
	f.video(shop.APIKey, model)
	f.video(shop.APIKey, model)
	for i := range 4 {
		req, _ := http.NewRequest("GET", f.srv.PublicURL()+"/v1/videos", nil)
		req.Header.Set("Authorization", "Bearer "+shop.APIKey)
		res, err := http.DefaultClient.Do(req)
		must(t, err, "list videos")
		res.Body.Close()
		st := res.StatusCode
		if want := map[bool]int{true: http.StatusOK, false: http.StatusTooManyRequests}[i < 2]; st != want {
			t.Fatalf("list videos #%d: %d, want %d", i+1, st, want)
		}
	}

	base := "http://" + f.srv.AdminAddr()
	if st, body, _ := send(t, "GET", base+"/console/api/accounts", "", nil, nil); st != http.StatusUnauthorized {
		t.Fatalf("accounts without a session: %d %s", st, body)
	}
	if st, body, _ := send(t, "GET", base+"/console/api/accounts/"+shop.AccountID, "", nil, nil); st != http.StatusUnauthorized {
		t.Fatalf("account without a session: %d %s", st, body)
	}
	ck, _ := loginCookie(t, base)
	get := func(path string, want int, out any) {
		t.Helper()
		st, body, _ := send(t, "GET", base+path, "", ck, nil)
		if st != want {
			t.Fatalf("GET %s: %d %s, want %d", path, st, body, want)
		}
		if out != nil {
			must(t, json.Unmarshal([]byte(body), out), "GET %s", path)
		}
	}

	first, second := shop.AccountID, other.AccountID
	if second < first {
		first, second = second, first
	}
	for _, c := range []struct {
		query   string
		ids     []string
		matched int
		more    bool
	}{
		{"", []string{first, second}, 2, false},
		{"?q=other+SHOP", []string{other.AccountID}, 1, false},
		{"?q=" + shop.AccountID, []string{shop.AccountID}, 1, false},
		{"?limit=1", []string{first}, 2, true},
		{"?limit=1&after=" + first, []string{second}, 2, false},
		{"?q=nobody", nil, 0, false},
	} {
		var page console.AccountsJSON
		get("/console/api/accounts"+c.query, http.StatusOK, &page)
		var ids []string
		for _, a := range page.Accounts {
			ids = append(ids, a.ID)
		}
		if strings.Join(ids, ",") != strings.Join(c.ids, ",") || page.Matched != c.matched || page.HasMore != c.more {
			t.Errorf("accounts%s: %v (matched %d, more %v), want %v (%d, %v)", c.query, ids, page.Matched, page.HasMore, c.ids, c.matched, c.more)
		}
	}
	get("/console/api/accounts?limit=0", http.StatusBadRequest, nil)
	get("/console/api/accounts/acct_nobody", http.StatusNotFound, nil)

	var a console.AccountJSON
	get("/console/api/accounts/"+shop.AccountID, http.StatusOK, &a)
	bal, err := f.admin.Account(ctx, shop.AccountID)
	must(t, err, "get account")
	today := a.SpentPerDay[len(a.SpentPerDay)-1]
	if a.Account.Plan != "pro" || a.Account.Name != "Fox Films" || a.Account.Balance != bal.Credits || bal.Credits >= 100_000 {
		t.Errorf("account %+v, want pro Fox Films with the balance the admin API gives (%d) below 100000", a.Account, bal.Credits)
	}
	if len(a.SpentPerDay) != console.SpendDays || today.Day != time.Now().UTC().Format(time.DateOnly) || today.Credits != 100_000-bal.Credits || !a.SpentComplete {
		t.Errorf("spent per day %+v (complete %v), want %d days ending today at %d", a.SpentPerDay, a.SpentComplete, console.SpendDays, 100_000-bal.Credits)
	}
	if a.Videos["queued"] != 2 || len(a.Videos) != 1 {
		t.Errorf("videos by status %v, want 2 queued", a.Videos)
	}
	if a.RateLimitHits.Total != 2 || a.RateLimitHits.ByClass["per_key"] != 2 || a.Account.RateLimitHits != 2 {
		t.Errorf("rate-limit hits %+v (row %d), want 2 per_key", a.RateLimitHits, a.Account.RateLimitHits)
	}
	var o console.AccountJSON
	get("/console/api/accounts/"+other.AccountID, http.StatusOK, &o)
	if o.RateLimitHits.Total != 0 || len(o.Videos) != 0 || o.Account.Balance != 50 {
		t.Errorf("the other account: %+v, want no hits, no video, 50 credits", o)
	}

	// The page follows the account live.
	_, ch := stream(t, base+"/console/api/events?page=account&id="+shop.AccountID, ck)
	next(t, ch, "snapshot", 5*time.Second, func(d string) bool { return strings.Contains(d, shop.AccountID) })
	key, err := f.admin.CreateKey(ctx, shop.AccountID) // the first key is out of requests
	must(t, err, "create key")
	f.video(key.APIKey, model)
	next(t, ch, "snapshot", 10*time.Second, func(d string) bool { return strings.Contains(d, `"queued":3`) })
}
