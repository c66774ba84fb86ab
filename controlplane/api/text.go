package api

import (
	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/textguard"
)

// Free text a client stores (names, prompts, a brand's identity) is shown
// back later: in list pages, dashboards and the operators' and customers'
// terminals, where an escape sequence would recolour, move the cursor or
// retitle the window. Such characters are refused, not dropped, so what is
// stored is exactly what the client sent and the client learns where its
// text went wrong (a pasted terminal log, a stray byte from an encoder).

// checkName refuses C0 and C1 control characters (U+0000–U+001F,
// U+007F–U+009F) in a one-line name: a name has no use for a line break or
// a tab, and either would break the tables it is listed in. It refuses the
// bidirectional overrides and isolates too (textguard.Bidi), which make a
// name read in another order in every list than it is stored.
func checkName(field, s string) *apierr.Error {
	return checkControls(field, s, textguard.Line)
}

// checkLongText is checkName for a text that may have lines (a prompt, a
// script, a description): newline and tab are kept, and a carriage return
// right before a newline (text pasted from Windows), and bidirectional
// controls (right-to-left writing uses them); the other control characters
// are refused, a lone carriage return too (it moves a terminal's cursor back
// over what was printed).
func checkLongText(field, s string) *apierr.Error {
	return checkControls(field, s, textguard.Lines)
}

func checkControls(field, s string, m textguard.Mode) *apierr.Error {
	f, ok := textguard.Check(s, m)
	if ok {
		return nil
	}
	return apierr.Invalid(field, f.Message(field, m)).With("position", f.Pos).With("character", f.Code())
}
