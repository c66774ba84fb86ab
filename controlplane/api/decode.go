package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
)

// object is a JSON object body decoded one level deep: every field is checked for
// its type on its own, so an error can name the field. Its values are slices
// of the request body, which nothing writes to.
type object map[string]json.RawMessage

// utf8BOM is accepted before a body and skipped: RFC 8259 (section 8.1) lets
// a parser ignore it, and Windows tools write one unasked (PowerShell 5's
// Set-Content and Out-File -Encoding UTF8, Notepad before 2019), so
// refusing it would fail customers over bytes that change no value.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// decodeObject parses a body that must be one JSON object and nothing else,
// in UTF-8, with each key once.
//
// json.Valid scans the body once; walkObject then cuts its top-level values
// out by hand instead of json.Unmarshal into a map, which scanned the body a
// second time with the full state machine and hid the keys, so a duplicate
// could not be seen. Refusals are worked out only for a body already refused.
func decodeObject(body []byte) (object, *apierr.Error) {
	trimmed := bytes.TrimSpace(bytes.TrimPrefix(body, utf8BOM))
	if len(trimmed) == 0 {
		return nil, apierr.New(http.StatusBadRequest, apierr.CodeInvalidRequest, "request body is empty; send a JSON object").
			With("expected", "a JSON object")
	}
	if !json.Valid(trimmed) {
		return nil, syntaxError(trimmed)
	}
	if trimmed[0] != '{' {
		found := jsonKind(trimmed[0])
		return nil, apierr.New(http.StatusBadRequest, apierr.CodeInvalidRequest,
			fmt.Sprintf("the body must be a JSON object ({\"field\": value, …}), not %s", found)).
			With("expected", "a JSON object").With("found", found)
	}
	// json.Valid lets invalid UTF-8 through inside strings, and decoding turns
	// it into U+FFFD: the stored text would differ from what was sent.
	if !utf8.Valid(trimmed) {
		return nil, invalidUTF8(trimmed)
	}
	o, e := walkObject(trimmed)
	if e != nil {
		return nil, e
	}
	for k, v := range o {
		if bytes.Equal(v, []byte("null")) {
			delete(o, k) // null means absent
		}
	}
	return o, nil
}

// walkObject splits a valid JSON object into its keys and raw values, and
// refuses a key given twice: encoding/json keeps the last, so a client's
// bug (a field set twice) would pass silently with one of its two values.
func walkObject(b []byte) (object, *apierr.Error) {
	o := object{}
	i := skipSpace(b, 1)
	if b[i] == '}' {
		return o, nil
	}
	for {
		end := stringEnd(b, i)
		raw := b[i:end]
		key, ok := plainString(raw)
		if !ok {
			_ = json.Unmarshal(raw, &key) // valid JSON: an escape to undo
		}
		i = skipSpace(b, skipSpace(b, end)+1) // past the colon
		vend := valueEnd(b, i)
		if _, dup := o[key]; dup {
			line, col := position(b, i)
			return nil, apierr.Invalid(key, fmt.Sprintf("field %q is given more than once; give it once (only one value can be used, and the server will not guess which)", key)).
				With("line", line).With("column", col)
		}
		o[key] = b[i:vend]
		i = skipSpace(b, vend)
		if b[i] == '}' {
			return o, nil
		}
		i = skipSpace(b, i+1) // past the comma
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index after the valid JSON string starting at b[i].
func stringEnd(b []byte, i int) int {
	for i++; ; i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
}

// valueEnd returns the index after the valid JSON value starting at b[i].
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for {
			switch b[i] {
			case '"':
				i = stringEnd(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
	}
	for i < len(b) && !strings.ContainsRune(",}] \t\n\r", rune(b[i])) {
		i++
	}
	return i
}

// jsonKind names the kind of the valid JSON value that starts with c.
func jsonKind(c byte) string {
	switch c {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// syntaxError explains a body that is not one valid JSON value: where it
// breaks and what was expected there, in words rather than encoding/json's
// (which quoted a stray byte as a Latin-1 character, 'ï' for a UTF-8 byte).
func syntaxError(b []byte) *apierr.Error {
	invalid := func(msg string, off int) *apierr.Error {
		line, col := position(b, off)
		return apierr.New(http.StatusBadRequest, apierr.CodeInvalidRequest, fmt.Sprintf("%s (line %d, column %d)", msg, line, col)).
			With("expected", "a JSON object").With("offset", off).With("line", line).With("column", col)
	}
	if bytes.HasPrefix(b, []byte{0xFF, 0xFE}) || bytes.HasPrefix(b, []byte{0xFE, 0xFF}) {
		return invalid("the body is UTF-16 (it starts with a UTF-16 byte-order mark); send the JSON encoded as UTF-8", 0)
	}
	var v json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(b))
	err := dec.Decode(&v)
	if err == nil {
		off := int(dec.InputOffset())
		off = skipSpace(b, off)
		return invalid(fmt.Sprintf("the body has data after its JSON value; send exactly one JSON object (found %s)", describeByte(b[off])), off)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) && se.Offset > 0 && int(se.Offset) <= len(b) {
		off := int(se.Offset) - 1
		if ctx, ok := strings.CutPrefix(se.Error(), "invalid character "); ok {
			// ctx is the quoted character, a space and where it was found.
			if j := strings.Index(ctx[1:], "' "); j >= 0 {
				return invalid(fmt.Sprintf("the body is not valid JSON: unexpected %s %s", describeByte(b[off]), ctx[j+3:]), off)
			}
			return invalid(fmt.Sprintf("the body is not valid JSON: unexpected %s", describeByte(b[off])), off)
		}
		return invalid("the body is not valid JSON: "+se.Error(), off)
	}
	return invalid("the body ends before its JSON value does (cut short?); send one complete JSON object", len(b))
}

// describeByte names a byte for a message: printable ASCII as itself, any
// other as its value (it may be part of a multi-byte character).
func describeByte(c byte) string {
	if c > ' ' && c < 0x7f {
		return fmt.Sprintf("character %q", rune(c))
	}
	return fmt.Sprintf("byte 0x%02X", c)
}

func invalidUTF8(b []byte) *apierr.Error {
	off := 0
	for off < len(b) {
		r, n := utf8.DecodeRune(b[off:])
		if r == utf8.RuneError && n <= 1 {
			break
		}
		off += n
	}
	line, col := position(b, off)
	return apierr.New(http.StatusBadRequest, apierr.CodeInvalidRequest,
		fmt.Sprintf("the body is not valid UTF-8: byte 0x%02X at line %d, column %d; JSON must be sent as UTF-8", b[off], line, col)).
		With("offset", off).With("line", line).With("column", col)
}

// position is the 1-based line and column (in bytes) of b[off].
func position(b []byte, off int) (line, col int) {
	before := b[:min(off, len(b))]
	nl := bytes.LastIndexByte(before, '\n')
	return bytes.Count(before, []byte("\n")) + 1, len(before) - nl
}

// checkFields refuses a field outside allowed, naming the first in sorted order.
func (o object) checkFields(allowed ...string) *apierr.Error {
	for _, k := range o.sortedKeys() {
		if slices.Contains(allowed, k) {
			continue
		}
		msg := fmt.Sprintf("unknown field %q; allowed fields are %s", k, strings.Join(allowed, ", "))
		if len(allowed) == 0 {
			msg = fmt.Sprintf("unknown field %q; this endpoint takes no fields (send an empty body or {})", k)
		}
		return apierr.Invalid(k, msg).With("allowed", append([]string{}, allowed...))
	}
	return nil
}

func (o object) sortedKeys() []string {
	keys := make([]string, 0, len(o))
	for k := range o {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// checkQuery refuses query parameters outside allowed (naming them all,
// details.field the first in sorted order) and any given more than once.
func checkQuery(q url.Values, allowed []string) *apierr.Error {
	var unknown []string
	for k := range q {
		if !slices.Contains(allowed, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		names := make([]string, len(unknown))
		for i, k := range unknown {
			names[i] = strconv.Quote(k)
		}
		return apierr.Invalid(unknown[0], fmt.Sprintf("unknown query parameter %s; use %s",
			strings.Join(names, ", "), strings.Join(allowed, ", "))).With("allowed", slices.Clone(allowed))
	}
	for _, k := range allowed {
		if len(q[k]) > 1 {
			return apierr.Invalid(k, fmt.Sprintf("query parameter %q is given %d times; give it once", k, len(q[k])))
		}
	}
	return nil
}

func typeError(field, want string) *apierr.Error {
	return apierr.Invalid(field, fmt.Sprintf("field %q must be %s", field, want)).With("expected", want)
}

// str reads an optional string field.
func (o object) str(field string) (string, bool, *apierr.Error) {
	raw, ok := o[field]
	if !ok {
		return "", false, nil
	}
	if s, ok := plainString(raw); ok {
		return s, true, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", true, typeError(field, "a string")
	}
	return s, true, nil
}

// plainString reads a JSON string with nothing to unescape or replace,
// which is most of them, without a decoder (each json.Unmarshal of a field
// cost a decoder, a scan and a reflection walk). raw is one valid JSON value
// (decodeObject's), so a string of it holds no control character; one with
// an escape or invalid UTF-8 is left to json.Unmarshal.
func plainString(raw json.RawMessage) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	in := raw[1 : len(raw)-1]
	if bytes.IndexByte(in, '\\') >= 0 || !utf8.Valid(in) {
		return "", false
	}
	return string(in), true
}

// plainInteger reads a JSON integer written as digits with an optional
// minus sign, which fits in an int64, without a decoder.
func plainInteger(raw []byte) (int64, bool) {
	digits := raw
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if raw[0] == '-' {
		n = -n
	}
	return n, true
}

func (o object) boolean(field string) (*bool, *apierr.Error) {
	raw, ok := o[field]
	if !ok {
		return nil, nil
	}
	var b bool
	if err := json.Unmarshal(raw, &b); err != nil {
		return nil, typeError(field, "a boolean (true or false)")
	}
	return &b, nil
}

// integer reads an optional integer field: a JSON number without a fraction.
func (o object) integer(field string) (*int64, *apierr.Error) {
	raw, ok := o[field]
	if !ok {
		return nil, nil
	}
	if i, ok := plainInteger(raw); ok {
		return &i, nil
	}
	// json.Number also accepts a quoted number ("30"); a string is not an integer.
	var n json.Number
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] == '"' || json.Unmarshal(t, &n) != nil {
		return nil, typeError(field, "an integer")
	}
	i, err := strconv.ParseInt(n.String(), 10, 64)
	if err != nil {
		f, ferr := n.Float64()
		if ferr != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return nil, typeError(field, "an integer")
		}
		i = int64(f)
	}
	return &i, nil
}

func (o object) number(field string) (*float64, *apierr.Error) {
	raw, ok := o[field]
	if !ok {
		return nil, nil
	}
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, typeError(field, "a number")
	}
	return &f, nil
}

func (o object) strings(field string) ([]string, bool, *apierr.Error) {
	raw, ok := o[field]
	if !ok {
		return nil, false, nil
	}
	var s []string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, true, typeError(field, "an array of strings")
	}
	return s, true, nil
}
