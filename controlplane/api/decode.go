package api

import (
	"bytes"
	"encoding/json"
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
// its type on its own, so an error can name the field.
type object map[string]json.RawMessage

// decodeObject parses a body that must be one JSON object and nothing else.
func decodeObject(body []byte) (object, *apierr.Error) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return nil, apierr.New(http.StatusBadRequest, apierr.CodeInvalidRequest, "request body is empty; send a JSON object")
	}
	var o object
	// One object and nothing after it is what Unmarshal accepts; a body it
	// refuses goes through a Decoder, whose errors say which of the two
	// failed. (A Decoder for every body copied it into a buffer of its own.)
	if err := json.Unmarshal(trimmed, &o); err != nil || o == nil {
		o = nil
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		if err := dec.Decode(&o); err != nil || o == nil {
			msg := "request body is not a JSON object"
			if err != nil {
				msg += ": " + err.Error()
			}
			return nil, apierr.New(http.StatusBadRequest, apierr.CodeInvalidRequest, msg)
		}
		return nil, apierr.New(http.StatusBadRequest, apierr.CodeInvalidRequest, "request body has data after the JSON object")
	}
	for k, v := range o {
		if bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			delete(o, k) // null means absent
		}
	}
	return o, nil
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
