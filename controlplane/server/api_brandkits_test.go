package server_test

import (
	"image/color"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/vidfarm/vidfarm/controlplane/server"
)

// withPrivateURLs turns on the development switch that lets the farm reach
// loopback addresses over http (a test page).
func withPrivateURLs() option { return func(c *server.Config) { c.AllowPrivateURLs = true } }

func TestBrandKits(t *testing.T) {
	h := start(t)
	_, key := h.account("pro", 100)
	_, otherKey := h.account("pro", 100)

	kit := expectAPIStatus(t, h.do("POST", "/v1/brand-kits", key, `{"name":"Acme","colors":["#E63946","#1d3557"],"fonts":["Inter"],"motion_style":"dynamic","brand_identity":"Bold rockets.","logo_url":"https://1.1.1.1/logo.png"}`), http.StatusCreated)
	id, _ := kit["id"].(string)
	if !strings.HasPrefix(id, "br_") || kit["object"] != "brand_kit" || !jsonEqual(t, kit["colors"], []string{"#e63946", "#1d3557"}) ||
		kit["logo_url"] != "https://1.1.1.1/logo.png" || kit["logo_asset_id"] != nil {
		t.Fatalf("created kit %v", kit)
	}
	for _, tc := range []struct {
		name, body, code, field string
	}{
		{"no name", `{"colors":["#fff"]}`, "invalid_request", "name"},
		{"a colour name", `{"name":"k","colors":["#fff","red"]}`, "invalid_request", "colors"},
		{"a short hex", `{"name":"k","colors":["#ff"]}`, "invalid_request", "colors"},
		{"colours as a string", `{"name":"k","colors":"#fff"}`, "invalid_request", "colors"},
		{"too many colours", `{"name":"k","colors":["#000","#111","#222","#333","#444","#555","#666","#777","#888"]}`, "invalid_request", "colors"},
		{"a font with css", `{"name":"k","fonts":["Inter; color: red"]}`, "invalid_request", "fonts"},
		{"an unknown motion style", `{"name":"k","motion_style":"wobbly"}`, "invalid_request", "motion_style"},
		{"both logos", `{"name":"k","logo_url":"https://1.1.1.1/l.png","logo_asset_id":"as_x"}`, "invalid_request", "logo_url"},
		{"a loopback logo", `{"name":"k","logo_url":"https://127.0.0.1/l.png"}`, "invalid_url", "logo_url"},
		{"a plain http logo", `{"name":"k","logo_url":"http://1.1.1.1/l.png"}`, "invalid_url", "logo_url"},
		{"another account's logo asset", `{"name":"k","logo_asset_id":"as_nope"}`, "invalid_request", "logo_asset_id"},
		{"an unknown field", `{"name":"k","colours":["#fff"]}`, "invalid_request", "colours"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := expectAPIError(t, h.do("POST", "/v1/brand-kits", key, tc.body), http.StatusBadRequest, tc.code)
			if f := errDetails(t, e)["field"]; f != tc.field {
				t.Fatalf("details.field = %v, want %s: %v", f, tc.field, e)
			}
		})
	}

	logo := h.readyAsset(key, pngBytes(t, 64, 64, color.RGBA{255, 255, 255, 255}))
	withAsset := expectAPIStatus(t, h.do("POST", "/v1/brand-kits", key, `{"name":"Acme 2","logo_asset_id":"`+logo["id"].(string)+`"}`), http.StatusCreated)
	list := expectAPIStatus(t, h.do("GET", "/v1/brand-kits", key, nil), http.StatusOK)
	if jsonInt(t, list["total"]) != 2 || list["data"].([]any)[0].(map[string]any)["id"] != withAsset["id"] {
		t.Fatalf("list, newest first: %v", list)
	}
	// The logo asset is kept while a kit uses it.
	expectAPIError(t, h.do("DELETE", "/v1/assets/"+logo["id"].(string), key, nil), http.StatusBadRequest, "invalid_request")

	// Videos take only the account's own kits.
	e := expectAPIError(t, h.do("POST", "/v1/videos", otherKey, `{"mode":"auto","prompt":"p","brand_kit_id":"`+id+`"}`), http.StatusBadRequest, "invalid_request")
	if errDetails(t, e)["field"] != "brand_kit_id" {
		t.Fatalf("details %v", e)
	}
	expectAPIError(t, h.do("DELETE", "/v1/brand-kits/"+id, otherKey, nil), http.StatusNotFound, "not_found")
	v := h.create(key, `{"mode":"auto","prompt":"rockets","brand_kit_id":"`+id+`"}`)
	expectAPIError(t, h.do("DELETE", "/v1/brand-kits/"+id, key, nil), http.StatusBadRequest, "invalid_request")
	if _, err := h.admin.FailVideo(t.Context(), v["id"].(string), "test"); err != nil {
		t.Fatal(err)
	}
	if del := expectAPIStatus(t, h.do("DELETE", "/v1/brand-kits/"+id, key, nil), http.StatusOK); del["deleted"] != true {
		t.Fatalf("delete %v", del)
	}
	expectAPIError(t, h.do("DELETE", "/v1/brand-kits/"+id, key, nil), http.StatusNotFound, "not_found")
}

const brandPage = `<!doctype html><html><head><title>Home - Acme Rockets</title>
<meta property="og:site_name" content="Acme Rockets"><meta name="theme-color" content="#e63946">
<meta name="description" content="Rockets for road runners.">
<link rel="apple-touch-icon" href="/touch-icon.png">
<style>body { font-family: 'Fira Sans', sans-serif; color: #222 } a { color: #457B9D } .b { background: rgb(29,53,87) }</style>
</head><body><a style="color:#457b9d">Buy</a></body></html>`

func TestBrandKitFromURL(t *testing.T) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write([]byte(brandPage))
		case "/go": // the site's short address, redirected to a page whose links are relative
			http.Redirect(w, r, "/en/", http.StatusFound)
		case "/en/":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write([]byte(strings.Replace(brandPage, `href="/touch-icon.png"`, `href="touch-icon.png"`, 1)))
		case "/big":
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte(strings.Repeat("<p>rockets</p>", 200_000)))
		case "/json":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer site.Close()

	t.Run("drafts the kit, saves nothing", func(t *testing.T) {
		h := start(t, withPrivateURLs())
		_, key := h.account("pro", 100)
		d := expectAPIStatus(t, h.do("POST", "/v1/brand-kits/from-url", key, `{"url":"`+site.URL+`/"}`), http.StatusOK)
		want := map[string]any{
			"id": nil, "object": "brand_kit_draft", "name": "Acme Rockets", "colors": []string{"#e63946", "#457b9d", "#1d3557"},
			"fonts": []string{"Fira Sans"}, "logo_url": site.URL + "/touch-icon.png", "brand_identity": "Rockets for road runners.",
			"logo_asset_id": nil, "motion_style": nil, "created_at": nil, "source_url": site.URL + "/",
		}
		if !jsonEqual(t, d, want) {
			t.Fatalf("draft\n got %v\nwant %v", d, want)
		}
		// Relative links resolve against the page's address after redirects.
		moved := expectAPIStatus(t, h.do("POST", "/v1/brand-kits/from-url", key, `{"url":"`+site.URL+`/go"}`), http.StatusOK)
		if moved["logo_url"] != site.URL+"/en/touch-icon.png" || moved["source_url"] != site.URL+"/go" {
			t.Fatalf("draft of a redirected page: logo_url %v, source_url %v", moved["logo_url"], moved["source_url"])
		}
		if l := expectAPIStatus(t, h.do("GET", "/v1/brand-kits", key, nil), http.StatusOK); jsonInt(t, l["total"]) != 0 {
			t.Fatalf("the draft was saved: %v", l)
		}
		for _, tc := range []struct {
			name, body string
			status     int
			code       string
		}{
			{"no url", `{}`, 400, "invalid_request"},
			{"not a page", `{"url":"` + site.URL + `/json"}`, 400, "invalid_request"},
			{"a page too large", `{"url":"` + site.URL + `/big"}`, 400, "invalid_request"},
			{"a missing page", `{"url":"` + site.URL + `/gone"}`, 502, "upstream_error"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				expectAPIError(t, h.do("POST", "/v1/brand-kits/from-url", key, tc.body), tc.status, tc.code)
			})
		}
	})
	t.Run("the address rules hold without the development switch", func(t *testing.T) {
		h := start(t)
		_, key := h.account("pro", 100)
		for _, u := range []string{site.URL + "/", "https://127.0.0.1/", "https://169.254.169.254/latest", "https://0x7f.1/", "ftp://example.com/"} {
			e := expectAPIError(t, h.do("POST", "/v1/brand-kits/from-url", key, `{"url":"`+u+`"}`), http.StatusBadRequest, "invalid_url")
			if r, _ := errDetails(t, e)["reason"].(string); r == "" {
				t.Fatalf("%s: no reason in %v", u, e)
			}
		}
	})
}
