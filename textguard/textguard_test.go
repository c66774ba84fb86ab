package textguard

import "testing"

func TestPrintable(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"plain text", "plain text"},
		{"Füchse im Schnee 🦊 内存", "Füchse im Schnee 🦊 内存"},
		{"family 👨\u200d👩\u200d👧 and שלום\u200f.", "family 👨\u200d👩\u200d👧 and שלום\u200f."},
		{"esc \x1b]0;PWNED\x07", `esc \x1b]0;PWNED\a`},
		{"\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`},
		{"two\nlines\tand\r", `two\nlines\tand\r`},
		{"c1 \u009b31m \u0085", `c1 \u009b31m \u0085`},
		{"nul \x00 del \x7f", `nul \x00 del \x7f`},
		{"bad \xff byte, kept \uFFFD", `bad \xff byte, kept ` + "\uFFFD"},
		{"invoice_\u202efdp.exe", `invoice_\u202efdp.exe`},
		{"\u2066isolated\u2069 \u202aembedded\u202c", `\u2066isolated\u2069 \u202aembedded\u202c`},
	} {
		if got := Printable(c.in); got != c.want {
			t.Errorf("Printable(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		in      string
		mode    Mode
		pos     int // 0: accepted
		code    string
		bidi    bool
		comment string
	}{
		{"Launch teaser", Line, 0, "", false, "plain"},
		{"Füchse 🦊 内存 👨\u200d👩", Line, 0, "", false, "scripts and joined emoji"},
		{"שלום\u200f world \u200e", Line, 0, "", false, "direction marks are kept"},
		{"tab\there", Line, 4, "U+0009", false, "a name has no tab"},
		{"two\nlines", Line, 4, "U+000A", false, "nor a line break"},
		{"é\x1b[31m", Line, 2, "U+001B", false, "counted in characters"},
		{"invoice_\u202efdp.exe", Line, 9, "U+202E", true, "an override"},
		{"a\u2067b", Line, 2, "U+2067", true, "an isolate"},
		{"two\nlines\tand\r\nCRLF", Lines, 0, "", false, "line breaks and tabs in a long text"},
		{"مرحبا \u202bembedded\u202c", Lines, 0, "", false, "a long text keeps bidi controls"},
		{"lone\rreturn", Lines, 5, "U+000D", false, "a lone carriage return"},
		{"c1 \u0085", Lines, 4, "U+0085", false, "a C1 control"},
		{"ends with \r", Lines, 11, "U+000D", false, "a return at the end"},
	} {
		f, ok := Check(c.in, c.mode)
		if ok != (c.pos == 0) || f.Pos != c.pos || c.pos != 0 && (f.Code() != c.code || f.Bidi() != c.bidi) {
			t.Errorf("%s: Check(%q, %d) = %+v (%s, bidi %t), %t; want position %d %s", c.comment, c.in, c.mode, f, f.Code(), f.Bidi(), ok, c.pos, c.code)
		}
	}
}

func TestPrintableLines(t *testing.T) {
	in := "create: 400 invalid_request: name \x1b[2J\n  hint: rename it\u202e\n"
	want := "create: 400 invalid_request: name \\x1b[2J\n  hint: rename it\\u202e\n"
	if got := PrintableLines(in); got != want {
		t.Errorf("PrintableLines(%q) = %q, want %q", in, got, want)
	}
}
