package brandkit

import (
	"net/url"
	"reflect"
	"testing"
)

func TestExtract(t *testing.T) {
	base, _ := url.Parse("https://acme.example/products/index.html")
	for _, tc := range []struct {
		name string
		page string
		want Draft
	}{
		{
			name: "everything a page says of itself",
			page: `<!doctype html><html><head>
<title>Pricing | Acme Rockets</title>
<meta property="og:site_name" content="Acme">
<meta name="theme-color" content="#E63946">
<meta name="description" content="Rockets for road runners.">
<link rel="icon" href="/favicon-16.png" sizes="16x16">
<link rel="icon" href="/favicon-64.png" sizes="64x64">
<link rel="apple-touch-icon" href="touch.png" sizes="180x180">
<link rel="stylesheet" href="https://fonts.googleapis.com/css2?family=Roboto+Slab:wght@400&family=Inter">
<style>
  :root { --brand-blue: #1d3557; }
  body { color: #333; background: #fff; font-family: "Helvetica Neue", Arial, sans-serif; }
  #a1b { color: rgb(29, 53, 87); }
  .cta:hover { background-color: #1D3557; border: 1px solid rgba(69,123,157,0.5) }
</style></head>
<body><h1 style="color:#457b9d;font-family:Inter">Acme</h1></body></html>`,
			want: Draft{Name: "Acme", Colors: []string{"#e63946", "#1d3557", "#457b9d"},
				Fonts:         []string{"Inter", "Roboto Slab", "Helvetica Neue"},
				LogoURL:       "https://acme.example/products/touch.png",
				BrandIdentity: "Rockets for road runners."},
		},
		{
			name: "title and og:image when nothing better is said; greys when there is no colour",
			page: `<html><head><title>Acme – the road runner's friend</title>
<meta property="og:image" content="//cdn.acme.example/share.jpg">
<style>p { color: #222222 } h1 { color: #222; font-family: serif }</style></head></html>`,
			want: Draft{Name: "Acme", Colors: []string{"#222222"}, Fonts: []string{}, LogoURL: "https://cdn.acme.example/share.jpg"},
		},
		{
			name: "og:logo wins over icons; base href resolves; selectors are not colours",
			page: `<head><base href="https://static.acme.example/"><meta property="og:logo" content="logo.png?v=2">
<link rel="icon" href="favicon.ico"><style>#abc, #face { color: #0a0 }</style></head>`,
			want: Draft{Colors: []string{"#00aa00"}, Fonts: []string{}, LogoURL: "https://static.acme.example/logo.png?v=2"},
		},
		{
			name: "SVG and ICO logos, which the renderer cannot draw, are passed over",
			page: `<meta property="og:logo" content="/logo.svg"><link rel="icon" href="/favicon.ico"><meta property="og:image" content="/share.jpg">`,
			want: Draft{Fonts: []string{}, LogoURL: "https://acme.example/share.jpg"},
		},
		{
			name: "control characters and direction overrides in the page's text are left out of the draft",
			page: "<title>Acme\u001b]0;PWNED\u0007 Rockets\u202e</title><meta name=\"description\" content=\"Rockets\u001b[31m for all\">",
			want: Draft{Name: "Acme]0;PWNED Rockets", Fonts: []string{}, BrandIdentity: "Rockets[31m for all"},
		},
		{
			name: "an empty page drafts nothing",
			page: ``,
			want: Draft{Fonts: []string{}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Extract([]byte(tc.page), base)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("draft\n got %#v\nwant %#v", got, tc.want)
			}
		})
	}
}

func TestNormalizeColor(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"#ABC", "#aabbcc", true}, {"#a1b2c3", "#a1b2c3", true}, {" #A1B2C3ff ", "#a1b2c3", true}, {"#abcd", "#aabbcc", true},
		{"abc", "", false}, {"#ab", "", false}, {"#ggg", "", false}, {"#12345", "", false}, {"red", "", false},
	} {
		got, err := NormalizeColor(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("NormalizeColor(%q) = %q, %v; want %q ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}
