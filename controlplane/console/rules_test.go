package console_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"

	"github.com/vidfarm/vidfarm/controlplane/admin"
	"github.com/vidfarm/vidfarm/controlplane/console"
	"github.com/vidfarm/vidfarm/models"
)

// send makes one request to the console with the given cookie (nil: none)
// and headers, and returns the status, the body and the cookies set.
func send(t *testing.T, method, url, body string, ck *http.Cookie, hdr map[string]string) (int, string, []*http.Cookie) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	must(t, err, "build request")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if ck != nil {
		req.AddCookie(ck)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	must(t, err, "%s %s", method, url)
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(raw), res.Cookies()
}

// TestSessionRules checks over real HTTP who the console lets in and what it
// lets them do: the admin token buys a session cookie with the right
// attributes; no cookie, a wrong token, a forged cookie, another site's
// request, a missing or wrong CSRF token are refused and change nothing;
// logout ends the session on the server.
func TestSessionRules(t *testing.T) {
	f := startFarm(t)
	f.register("gpu-r", models.IDs())
	base := "http://" + f.srv.AdminAddr()
	login := `{"token": "` + adminToken + `"}`
	cordon := base + "/console/api/nodes/gpu-r/cordon"

	// Refused before any session exists.
	for _, c := range []struct {
		name, method, path, body string
		hdr                      map[string]string
		want                     int
	}{
		{"no cookie", "GET", "/console/api/farm", "", nil, http.StatusUnauthorized},
		{"the admin token is not a session", "GET", "/console/api/farm", "", map[string]string{"Authorization": "Bearer " + adminToken}, http.StatusUnauthorized},
		{"wrong token", "POST", "/console/login", `{"token": "guess"}`, nil, http.StatusUnauthorized},
		{"empty token", "POST", "/console/login", `{"token": ""}`, nil, http.StatusUnauthorized},
		{"login from another origin", "POST", "/console/login", login, map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden},
		{"login from another site", "POST", "/console/login", login, map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"cordon without a session", "POST", "/console/api/nodes/gpu-r/cordon", "", nil, http.StatusUnauthorized},
	} {
		st, body, cks := send(t, c.method, base+c.path, c.body, nil, c.hdr)
		if st != c.want || len(cks) != 0 {
			t.Errorf("%s: %d %s, cookies %v; want %d and none", c.name, st, body, cks, c.want)
		}
	}

	st, body, cks := send(t, "POST", base+"/console/login", login, nil, map[string]string{"Origin": base, "Sec-Fetch-Site": "same-origin"})
	if st != http.StatusOK || len(cks) != 1 {
		t.Fatalf("login: %d %s %v", st, body, cks)
	}
	ck := cks[0]
	if ck.Name != console.CookieName || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Secure || ck.Path != "/console" || ck.MaxAge <= 0 {
		t.Fatalf("session cookie %+v: want HttpOnly, SameSite=Strict, Path=/console, not Secure over plain http", ck)
	}
	var sess console.SessionJSON
	must(t, json.Unmarshal([]byte(body), &sess), "login answer")
	if len(sess.CSRFToken) < 32 || strings.Contains(body, ck.Value) {
		t.Fatalf("login answer %s: want a CSRF token apart from the cookie", body)
	}
	csrf := map[string]string{console.CSRFHeader: sess.CSRFToken}
	// The token with its first character changed: "x" + the rest would be the
	// token itself whenever it begins with an x.
	wrong := "x" + sess.CSRFToken[1:]
	if sess.CSRFToken[0] == 'x' {
		wrong = "y" + sess.CSRFToken[1:]
	}

	for _, c := range []struct {
		name string
		ck   *http.Cookie
		hdr  map[string]string
		want int
	}{
		{"forged cookie", &http.Cookie{Name: console.CookieName, Value: "made-up"}, csrf, http.StatusUnauthorized},
		{"no CSRF token", ck, nil, http.StatusForbidden},
		{"wrong CSRF token", ck, map[string]string{console.CSRFHeader: wrong}, http.StatusForbidden},
		{"another origin", ck, map[string]string{console.CSRFHeader: sess.CSRFToken, "Origin": "https://evil.example"}, http.StatusForbidden},
		{"another site", ck, map[string]string{console.CSRFHeader: sess.CSRFToken, "Sec-Fetch-Site": "same-site"}, http.StatusForbidden},
	} {
		if st, body, _ := send(t, "POST", cordon, `{"reason": "x"}`, c.ck, c.hdr); st != c.want {
			t.Errorf("cordon with %s: %d %s, want %d", c.name, st, body, c.want)
		}
		if s := f.nodeState("gpu-r"); s != admin.NodeActive {
			t.Fatalf("cordon with %s changed the node to %s", c.name, s)
		}
	}

	if st, body, _ := send(t, "GET", base+"/console/api/farm", "", ck, nil); st != http.StatusOK || !strings.Contains(body, `"gpu-r"`) {
		t.Fatalf("farm with the session: %d %s", st, body)
	}
	if st, body, _ := send(t, "POST", cordon, `{"reason": "x"}`, ck, csrf); st != http.StatusOK || f.nodeState("gpu-r") != admin.NodeCordoned {
		t.Fatalf("cordon with session and CSRF token: %d %s", st, body)
	}
	// The admin API's refusals come through as it gave them.
	for _, c := range []struct{ path, body, code string }{
		{"/console/api/nodes/no-such-node/cordon", "", `"not_found"`},
		{"/console/api/nodes/gpu-r/drain", `{"timeout_seconds": -1}`, `"invalid_request"`},
		{"/console/api/nodes/gpu-r/reboot", "", `"not_found"`},
	} {
		if st, body, _ := send(t, "POST", base+c.path, c.body, ck, csrf); st/100 != 4 || !strings.Contains(body, c.code) {
			t.Errorf("POST %s %s: %d %s, want %s", c.path, c.body, st, body, c.code)
		}
	}
	if st, body, _ := send(t, "POST", base+"/console/logout", "", ck, nil); st != http.StatusForbidden {
		t.Fatalf("logout without the CSRF token: %d %s", st, body)
	}
	st, _, cks = send(t, "POST", base+"/console/logout", "", ck, csrf)
	if st != http.StatusNoContent || len(cks) != 1 || cks[0].MaxAge >= 0 {
		t.Fatalf("logout: %d, cookies %v", st, cks)
	}
	if st, body, _ := send(t, "GET", base+"/console/api/farm", "", ck, nil); st != http.StatusUnauthorized {
		t.Fatalf("the old cookie after logout: %d %s", st, body)
	}
	_, metrics, _ := send(t, "GET", base+"/metrics", "", nil, map[string]string{"Authorization": "Bearer " + adminToken})
	for _, want := range []string{`vidfarm_console_logins_total{result="refused"} 2`, `vidfarm_console_logins_total{result="ok"} 1`,
		`vidfarm_console_actions_total{action="cordon",result="ok"} 1`, `vidfarm_console_actions_total{action="cordon",result="failed"} 1`, "vidfarm_console_sessions 0"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// TestPageHeaders checks that the login page and its assets are served to
// anyone (they hold nothing), with headers that keep them out of frames and
// caches, and that unknown console paths are 404s in the error envelope.
func TestPageHeaders(t *testing.T) {
	f := startFarm(t)
	base := "http://" + f.srv.AdminAddr()
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar}
	for _, c := range []struct {
		path, contentType string
		status            int
	}{
		{"/console", "text/html", http.StatusOK}, // redirected to /console/
		{"/console/", "text/html", http.StatusOK},
		{"/console/static/console.js", "javascript", http.StatusOK},
		{"/console/static/console.css", "text/css", http.StatusOK},
		{"/console/nothing", "application/json", http.StatusNotFound},
	} {
		res, err := hc.Get(base + c.path)
		must(t, err, "GET %s", c.path)
		res.Body.Close()
		h := res.Header
		if res.StatusCode != c.status || !strings.Contains(h.Get("Content-Type"), c.contentType) ||
			!strings.Contains(h.Get("Content-Security-Policy"), "default-src 'self'") || h.Get("X-Frame-Options") != "DENY" || h.Get("Cache-Control") != "no-store" {
			t.Errorf("GET %s: %d %v", c.path, res.StatusCode, h)
		}
	}
	// The admin API beside the console is unchanged.
	if st, _, _ := send(t, "GET", base+"/admin/v1/nodes", "", nil, nil); st != http.StatusUnauthorized {
		t.Errorf("admin API without a token: %d", st)
	}
}
