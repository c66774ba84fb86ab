package api

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
)

// TestDecodeObject: a body must be one JSON object and nothing after it;
// each refusal says which, and a null field counts as absent. (A Decoder's
// More let a body end in a stray ] or } through.)
func TestDecodeObject(t *testing.T) {
	for _, tc := range []struct {
		body   string
		fields []string // the fields kept, when accepted
		refuse string   // a part of the refusal's message
	}{
		{`{}`, nil, ""},
		{" \n{\"a\":1,\"b\":null}\t", []string{"a"}, ""},
		{``, nil, "request body is empty"},
		{`   `, nil, "request body is empty"},
		{`null`, nil, "request body is not a JSON object"},
		{`[1]`, nil, "request body is not a JSON object: "},
		{`{"a":`, nil, "request body is not a JSON object: "},
		{`"s"`, nil, "request body is not a JSON object: "},
		{`{"a":1} {"b":2}`, nil, "request body has data after the JSON object"},
		{`{"a":1}x`, nil, "request body has data after the JSON object"},
		{`{"a":1}]`, nil, "request body has data after the JSON object"},
		{`{"a":1}}`, nil, "request body has data after the JSON object"},
	} {
		o, e := decodeObject([]byte(tc.body))
		if tc.refuse != "" {
			if e == nil || e.Code != apierr.CodeInvalidRequest || !strings.Contains(e.Message, tc.refuse) {
				t.Errorf("%q: %+v, want a refusal saying %q", tc.body, e, tc.refuse)
			}
			continue
		}
		if e != nil || len(o) != len(tc.fields) {
			t.Errorf("%q: %v %+v, want the fields %v", tc.body, o, e, tc.fields)
			continue
		}
		for _, f := range tc.fields {
			if _, ok := o[f]; !ok {
				t.Errorf("%q: field %s missing from %v", tc.body, f, o)
			}
		}
	}
}

// plainValues are field values as decodeObject hands them over, for the
// fast paths of str and integer to be held to encoding/json's reading.
var plainValues = []string{
	`""`, `"auto"`, `"a lighthouse at dusk"`, `"é ✓ 🎬"`, `"a\"b"`, `"\u00e9"`, `"a\\b"`,
	`"\ud800"`, "\"\xff\"", "\"\xc3\"", `"\n"`, `" spaced "`,
	`0`, `5`, `-3`, `-0`, `007`, `5.0`, `5.5`, `1e3`, `-`, `--1`, `+1`,
	`999999999999999999`, `-999999999999999999`, `9223372036854775807`, `-9223372036854775808`,
	`9223372036854775808`, `12345678901234567890`, `true`, `null`, `[1]`, `{"a":1}`, ` "x"`, `5 `,
}

// TestPlainValuesReadAsJSON: a value the fast paths take, they read as
// encoding/json does; the rest they leave to it.
func TestPlainValuesReadAsJSON(t *testing.T) {
	for _, v := range plainValues {
		checkPlain(t, []byte(v))
	}
}

func FuzzPlainValues(f *testing.F) {
	for _, v := range plainValues {
		f.Add([]byte(v))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkPlain(t, raw) })
}

func checkPlain(t *testing.T, raw []byte) {
	t.Helper()
	if s, ok := plainString(raw); ok {
		var want string
		if err := json.Unmarshal(raw, &want); err != nil {
			if json.Valid(raw) {
				t.Fatalf("plainString took %q, which encoding/json refuses as a string: %v", raw, err)
			}
		} else if s != want {
			t.Fatalf("plainString(%q) = %q, encoding/json reads %q", raw, s, want)
		}
	}
	if i, ok := plainInteger(raw); ok {
		var want int64
		if err := json.Unmarshal(raw, &want); err != nil {
			if json.Valid(raw) {
				t.Fatalf("plainInteger took %q, which encoding/json refuses as an int64: %v", raw, err)
			}
		} else if i != want {
			t.Fatalf("plainInteger(%q) = %d, encoding/json reads %d", raw, i, want)
		}
	}
}
