package api

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
)

// Free text a client stores (names, prompts, a brand's identity) is shown
// back later: in list pages, dashboards and the operators' and customers'
// terminals, where an escape sequence would recolour, move the cursor or
// retitle the window. Such characters are refused, not dropped, so what is
// stored is exactly what the client sent and the client learns where its
// text went wrong (a pasted terminal log, a stray byte from an encoder).

// checkName refuses C0 and C1 control characters (U+0000–U+001F,
// U+007F–U+009F) in a one-line name: a name has no use for a line break or
// a tab, and either would break the tables it is listed in.
func checkName(field, s string) *apierr.Error {
	return checkControls(field, s, false)
}

// checkLongText is checkName for a text that may have lines (a prompt, a
// script, a description): newline and tab are kept, and a carriage return
// right before a newline (text pasted from Windows); the other control
// characters are refused, a lone carriage return too (it moves a
// terminal's cursor back over what was printed).
func checkLongText(field, s string) *apierr.Error {
	return checkControls(field, s, true)
}

func checkControls(field, s string, lines bool) *apierr.Error {
	pos := 0
	for i, r := range s {
		pos++
		if !unicode.IsControl(r) || lines && (r == '\n' || r == '\t' || r == '\r' && strings.HasPrefix(s[i+1:], "\n")) {
			continue
		}
		allowed := "a name is one line of text without control characters: remove line breaks, tabs and escape sequences"
		if lines {
			allowed = "line breaks (\\n or \\r\\n) and tabs are allowed; other control characters (escape sequences, a lone carriage return) are not"
		}
		return apierr.Invalid(field, fmt.Sprintf("%s holds the control character U+%04X at character %d (counting from 1); %s",
			field, r, pos, allowed)).
			With("position", pos).With("character", fmt.Sprintf("U+%04X", r))
	}
	return nil
}
