package brandkit

import (
	"net/url"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

var hexColor = regexp.MustCompile(`^#[0-9a-f]{6}$`)

// FuzzExtract: any page drafts a kit within the limits, with normalised
// colours and absolute http(s) logo addresses, and never panics.
func FuzzExtract(f *testing.F) {
	for _, seed := range []string{
		`<style>a{color:#fff;font-family:"A B",serif}</style>`,
		`<meta name=theme-color content="#abc"><link rel=icon href=/i.png sizes="16x16 any">`,
		`<div style="--x: rgb(1,2,3); background: rgba(10%, 20%, 30%, .5)">`,
		`<title>a | b</title><base href="//x.example/"><meta property=og:logo content=l.png>`,
		`<style>@media (x){a{color:#123}}}}}{{{</style>`,
	} {
		f.Add(seed)
	}
	base, _ := url.Parse("https://site.example/a/b")
	f.Fuzz(func(t *testing.T, page string) {
		d := Extract([]byte(page), base)
		if len(d.Colors) > MaxColors || len(d.Fonts) > MaxFonts || utf8.RuneCountInString(d.Name) > MaxName ||
			utf8.RuneCountInString(d.BrandIdentity) > MaxBrandIdentity {
			t.Fatalf("draft over the limits: %+v", d)
		}
		for _, c := range d.Colors {
			if !hexColor.MatchString(c) {
				t.Fatalf("colour %q is not #rrggbb", c)
			}
		}
		if d.LogoURL != "" && !strings.HasPrefix(d.LogoURL, "https://") && !strings.HasPrefix(d.LogoURL, "http://") {
			t.Fatalf("logo %q is not an absolute http(s) address", d.LogoURL)
		}
	})
}

// BenchmarkExtract drafts a kit from a 200 KB page with a style sheet and
// inline styles, the size of a typical home page's HTML.
func BenchmarkExtract(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`<html><head><title>Acme | Home</title><meta name="theme-color" content="#e63946"><style>`)
	for i := range 400 {
		sb.WriteString(`.c` + strings.Repeat("x", i%7) + ` { color: #1d3557; background: rgb(69, 123, 157); font-family: "Inter", sans-serif }`)
	}
	sb.WriteString(`</style></head><body>`)
	for sb.Len() < 200_000 {
		sb.WriteString(`<p style="color:#457b9d">Rockets for road runners, delivered to the desert.</p>`)
	}
	page := []byte(sb.String())
	base, _ := url.Parse("https://acme.example/")
	b.SetBytes(int64(len(page)))
	for b.Loop() {
		Extract(page, base)
	}
}
