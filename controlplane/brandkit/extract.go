package brandkit

import (
	"bytes"
	"cmp"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/vidfarm/vidfarm/textguard"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Limits of a draft, the same as those of a saved kit.
const (
	MaxColors        = 8
	MaxFonts         = 5
	MaxName          = 100
	MaxFontName      = 100
	MaxBrandIdentity = 2000
)

// Draft is a kit as a page describes its own brand. Colors are "#rrggbb", the
// theme colour first, then the page's CSS colours by how often they are used
// (greys only when there is nothing else). LogoURL is absolute.
type Draft struct {
	Name          string
	Colors        []string
	Fonts         []string
	LogoURL       string
	BrandIdentity string
}

// page gathers what the tokenizer meets.
type page struct {
	base                                  *url.URL
	title, siteName, appName, description string
	themeColor                            string
	ogLogo, touchIcon, icon, ogImage      string
	touchIconSize, iconSize               int
	css                                   *cssScan
}

// Extract drafts a kit from an HTML page fetched from base. It reads the
// whole page once with the HTML tokenizer; nothing in it is run or fetched.
func Extract(doc []byte, base *url.URL) Draft {
	p := &page{base: base, css: newCSSScan()}
	z := html.NewTokenizer(bytes.NewReader(doc))
	var inTitle, inStyle bool
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			return p.draft()
		case html.TextToken:
			switch {
			case inTitle && p.title == "":
				p.title = strings.Join(strings.Fields(string(z.Text())), " ")
			case inStyle:
				p.css.scan(z.Text(), false)
			}
		case html.EndTagToken:
			inTitle, inStyle = false, false
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			a := atom.Lookup(name)
			inTitle, inStyle = a == atom.Title, a == atom.Style
			attrs := map[string]string{}
			for hasAttr {
				var k, v []byte
				k, v, hasAttr = z.TagAttr()
				attrs[string(k)] = string(v)
			}
			p.tag(a, attrs)
		}
	}
}

func (p *page) tag(a atom.Atom, attrs map[string]string) {
	if st := attrs["style"]; st != "" {
		p.css.scan([]byte(st), true)
	}
	switch a {
	case atom.Base:
		if u, err := p.base.Parse(attrs["href"]); err == nil && attrs["href"] != "" {
			p.base = u
		}
	case atom.Meta:
		key := strings.ToLower(cmp.Or(attrs["property"], attrs["name"]))
		content := strings.TrimSpace(attrs["content"])
		switch key {
		case "og:site_name":
			setOnce(&p.siteName, content)
		case "application-name":
			setOnce(&p.appName, content)
		case "theme-color", "msapplication-tilecolor":
			if c, err := NormalizeColor(content); err == nil {
				setOnce(&p.themeColor, c)
			}
		case "og:logo":
			setOnce(&p.ogLogo, p.abs(content))
		case "og:image", "og:image:url", "og:image:secure_url":
			setOnce(&p.ogImage, p.abs(content))
		case "description", "og:description":
			setOnce(&p.description, content)
		}
	case atom.Link:
		href := p.abs(attrs["href"])
		rels := strings.Fields(strings.ToLower(attrs["rel"]))
		size := largestSize(attrs["sizes"])
		switch {
		case href == "":
		case slices.Contains(rels, "apple-touch-icon") || slices.Contains(rels, "apple-touch-icon-precomposed"):
			if p.touchIcon == "" || size > p.touchIconSize {
				p.touchIcon, p.touchIconSize = href, size
			}
		case slices.Contains(rels, "icon"):
			if p.icon == "" || size > p.iconSize {
				p.icon, p.iconSize = href, size
			}
		case slices.Contains(rels, "stylesheet") && strings.HasPrefix(href, "https://fonts.googleapis.com/"):
			for _, f := range googleFonts(href) {
				p.css.font(f)
			}
		}
	}
}

// draft assembles the findings in order of how much they say of the brand.
func (p *page) draft() Draft {
	d := Draft{
		Name:          clip(cmp.Or(p.siteName, p.appName, titleName(p.title)), MaxName),
		LogoURL:       renderableLogo(p.ogLogo, p.touchIcon, p.icon, p.ogImage),
		BrandIdentity: clip(p.description, MaxBrandIdentity),
	}
	if p.themeColor != "" {
		d.Colors = append(d.Colors, p.themeColor)
	}
	var vivid, greys []string
	for _, c := range p.css.order {
		if c == p.themeColor {
			continue
		}
		if grey(c) {
			greys = append(greys, c)
		} else {
			vivid = append(vivid, c)
		}
	}
	byUse := func(a, b string) int { return p.css.colors[b] - p.css.colors[a] }
	slices.SortStableFunc(vivid, byUse)
	slices.SortStableFunc(greys, byUse)
	if len(vivid) == 0 && len(d.Colors) == 0 {
		vivid = greys
	}
	d.Colors = append(d.Colors, vivid...)
	d.Colors = d.Colors[:min(len(d.Colors), MaxColors)]
	fonts := append([]string{}, p.css.forder...)
	slices.SortStableFunc(fonts, func(a, b string) int { return p.css.fonts[b] - p.css.fonts[a] })
	d.Fonts = fonts[:min(len(fonts), MaxFonts)]
	return d
}

// renderableLogo is the first candidate the renderer can draw: agents take
// PNG, JPEG, WebP, GIF and BMP logos, so SVG and ICO files (common for icons)
// are passed over, by their extension.
func renderableLogo(candidates ...string) string {
	for _, c := range candidates {
		if c == "" {
			continue
		}
		u, err := url.Parse(c)
		if err != nil {
			continue
		}
		if ext := strings.ToLower(path.Ext(u.Path)); ext != ".svg" && ext != ".svgz" && ext != ".ico" {
			return c
		}
	}
	return ""
}

// abs resolves a reference against the page; only http(s) addresses count.
func (p *page) abs(ref string) string {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return ""
	}
	u, err := p.base.Parse(ref)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return ""
	}
	return u.String()
}

// titleName is the site's part of a page title: "Pricing | Acme" and
// "Acme – Home" name Acme, the part after or before the separator that is
// shorter.
func titleName(t string) string {
	for _, sep := range []string{" | ", " – ", " — ", " - ", " · ", " :: "} {
		if a, b, ok := strings.Cut(t, sep); ok {
			if utf8.RuneCountInString(b) < utf8.RuneCountInString(a) {
				return strings.TrimSpace(b)
			}
			return strings.TrimSpace(a)
		}
	}
	return t
}

// largestSize reads a sizes attribute ("32x32 180x180") as its largest side.
func largestSize(sizes string) int {
	best := 0
	for _, s := range strings.Fields(strings.ToLower(sizes)) {
		if s == "any" {
			return 1 << 16 // scalable
		}
		w, _, _ := strings.Cut(s, "x")
		if n, err := strconv.Atoi(w); err == nil && n > best {
			best = n
		}
	}
	return best
}

// googleFonts reads the families of a Google Fonts stylesheet address
// (family=Inter:wght@400&family=Roboto+Slab).
func googleFonts(href string) []string {
	u, err := url.Parse(href)
	if err != nil {
		return nil
	}
	var out []string
	for _, f := range u.Query()["family"] {
		for fam := range strings.SplitSeq(f, "|") { // css (v1) lists several with |
			name, _, _ := strings.Cut(fam, ":")
			if name = strings.TrimSpace(name); name != "" && len(name) <= MaxFontName {
				out = append(out, name)
			}
		}
	}
	return out
}

func setOnce(dst *string, v string) {
	if *dst == "" {
		*dst = v
	}
}

// clip cuts s to at most n characters.
func clip(s string, n int) string {
	// A page's text may hold control characters (an escape sequence in a
	// title) and bidirectional controls, which the API refuses in a brand
	// kit's name and identity: the draft, posted back as it is, must be a
	// valid kit.
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || textguard.Bidi(r) {
			return -1
		}
		return r
	}, s)
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}
