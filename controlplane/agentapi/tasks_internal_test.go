package agentapi

import "testing"

// TestCleanReason: a fail reason keeps its text and lines; escape
// sequences go whole, and no other control character survives.
func TestCleanReason(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"plain", "CUDA out of memory", "CUDA out of memory"},
		{"lines and tabs kept", "line 1\n\tline 2", "line 1\n\tline 2"},
		{"SGR colours", "\x1b[31mEVIL\x1b[0m <b>x</b>", "EVIL <b>x</b>"},
		{"SGR with many parameters", "\x1b[1;38;5;196merror\x1b[m: bad", "error: bad"},
		{"CSI private mode and cursor moves", "\x1b[?25l\x1b[2K\x1b[1Adone", "done"},
		{"OSC title ended by BEL", "esc \x1b]0;PWNED\x07 end", "esc  end"},
		{"OSC hyperlink ended by ST", "see \x1b]8;;https://x.example/\x1b\\the docs\x1b]8;;\x1b\\.", "see the docs."},
		{"DCS ended by ST", "a\x1bPq#0;2;0;0;0\x1b\\b", "ab"},
		{"C1 CSI and OSC", "a\u009b31mb\u009d0;t\u009cc", "abc"},
		{"charset designation", "\x1b(Bplain", "plain"},
		{"keypad mode", "\x1b=x\x1b>", "x"},
		{"OSC cut off by the end", "tail \x1b]0;half a title", "tail 0;half a title"},
		{"OSC cut off by a line", "\x1b]0;title\nnext line", "0;title\nnext line"},
		{"CSI cut off by the end", "tail \x1b[3", "tail "},
		{"lone ESC", "a\x1b", "a\uFFFD"},
		{"introducers without a body", "\u009d\u009d\x1b]x", "x"},
		{"carriage returns", "frame=1\rframe=2\r\nok", "frame=1\nframe=2\nok"},
		{"other C0 and C1", "a\x00b\x07c\x08d\x7fe\u0085f", "a\uFFFDb\uFFFDc\uFFFDd\uFFFDe\uFFFDf"},
		{"other scripts", "échec: 内存不足 🦊", "échec: 内存不足 🦊"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := cleanReason(c.in); got != c.want {
				t.Errorf("cleanReason(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}
