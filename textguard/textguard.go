// Package textguard says which characters of a text a client stores would
// act on the terminal or page that later shows it, and makes a text safe to
// print. Names, prompts and reasons come back in list pages, the console and
// operators' and customers' terminals, where a control character recolours,
// moves the cursor or retitles the window, and a bidirectional override
// makes what follows read in another order than it is stored ("Trojan
// Source": invoice_\u202Efdp.exe shows as invoice_exe.pdf). One leaf
// package, as netguard is for addresses and imageguard for images, so the
// API's refusals and the CLI's escaping agree on what is dangerous.
package textguard

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Bidi reports whether r embeds, overrides or isolates the direction of
// the text after it (U+202A–U+202E, U+2066–U+2069): the characters Go's
// bidichk analyzer and compilers flag. The marks U+200E, U+200F and U+061C
// are not among them: they set the direction of one neutral character, and
// right-to-left text needs them.
func Bidi(r rune) bool {
	return r >= 0x202A && r <= 0x202E || r >= 0x2066 && r <= 0x2069
}

// Mode says what a text may hold.
type Mode int

const (
	// Line is one line (a name, a reason): no control character and no
	// bidirectional control.
	Line Mode = iota
	// Lines is a text that may have lines (a prompt, a script): newline,
	// tab and a carriage return right before a newline are kept, and
	// bidirectional controls (right-to-left writing uses them); other
	// control characters, a lone carriage return among them (it moves a
	// terminal's cursor back over what was printed), are not.
	Lines
)

// Fault is the first character a text may not hold.
type Fault struct {
	Pos  int  // in characters, counting from 1
	Rune rune // the character
}

// Bidi reports whether the fault is a bidirectional control rather than a
// control character.
func (f Fault) Bidi() bool { return Bidi(f.Rune) }

// Code is the character as Unicode writes it: U+001B, U+202E.
func (f Fault) Code() string { return fmt.Sprintf("U+%04X", f.Rune) }

// Message says what is wrong with field, checked under m, and what it may
// hold, without echoing the character: the text of an API's refusal.
func (f Fault) Message(field string, m Mode) string {
	switch {
	case f.Bidi():
		return fmt.Sprintf("%s holds the bidirectional control %s at character %d (counting from 1), which makes the text after it display in another order than it is stored; it may hold right-to-left letters and the marks U+200E and U+200F, not embeddings, overrides or isolates (U+202A–U+202E, U+2066–U+2069)",
			field, f.Code(), f.Pos)
	case m == Lines:
		return fmt.Sprintf("%s holds the control character %s at character %d (counting from 1); line breaks (\\n or \\r\\n) and tabs are allowed; other control characters (escape sequences, a lone carriage return) are not",
			field, f.Code(), f.Pos)
	}
	return fmt.Sprintf("%s holds the control character %s at character %d (counting from 1); it is one line of text without control characters: remove line breaks, tabs and escape sequences",
		field, f.Code(), f.Pos)
}

// Check finds the first character s may not hold under m; ok is false when
// there is one.
func Check(s string, m Mode) (f Fault, ok bool) {
	pos := 0
	for i, r := range s {
		pos++
		switch {
		case unicode.IsControl(r):
			if m == Lines && (r == '\n' || r == '\t' || r == '\r' && strings.HasPrefix(s[i+1:], "\n")) {
				continue
			}
		case m == Line && Bidi(r):
		default:
			continue
		}
		return Fault{Pos: pos, Rune: r}, false
	}
	return Fault{}, true
}

// Printable is s with what would act on a terminal made visible: control
// characters and bidirectional controls as Go escapes (\x1b, \u202e), and
// bytes that are not UTF-8 as \xNN. Everything else, emoji sequences joined
// by U+200D included, is left as it is.
func Printable(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return r == utf8.RuneError || unicode.IsControl(r) || Bidi(r) }) < 0 {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError:
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				b.WriteString(`\x` + strconv.FormatUint(uint64(s[i])|0x100, 16)[1:])
				continue
			}
			b.WriteRune(r)
		case unicode.IsControl(r) || Bidi(r):
			q := strconv.QuoteRune(r) // '\x1b', with its quotes
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// PrintableLines is Printable for a text of several lines (an error with its
// hints): each line made printable, the line breaks kept.
func PrintableLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = Printable(l)
	}
	return strings.Join(lines, "\n")
}
