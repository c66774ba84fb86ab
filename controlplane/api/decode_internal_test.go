package api

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
)

// TestDecodeObject: a body must be one JSON object in UTF-8, each key once,
// and nothing after it; each refusal says which, with details, and a null
// field counts as absent. (A Decoder's More let a body end in a stray ] or }
// through.)
func TestDecodeObject(t *testing.T) {
	for _, tc := range []struct {
		body   string
		fields []string // the fields kept, when accepted
		refuse string   // a part of the refusal's message
	}{
		{`{}`, nil, ""},
		{" \n{\"a\":1,\"b\":null}\t", []string{"a"}, ""},
		{`{"a":{"b":[1,"}",{"c":"]\""}]},"d":"x\\","e":-1.5e3,"f":true}`, []string{"a", "d", "e", "f"}, ""},
		{"\xef\xbb\xbf{\"a\":\"é\"}", []string{"a"}, ""},
		{``, nil, "request body is empty"},
		{`   `, nil, "request body is empty"},
		{"\xef\xbb\xbf", nil, "request body is empty"},
		{`null`, nil, "must be a JSON object ({\"field\": value, …}), not null"},
		{`[1]`, nil, "must be a JSON object ({\"field\": value, …}), not an array"},
		{`"s"`, nil, "not a string"},
		{`12`, nil, "not a number"},
		{`{"a":`, nil, "the body ends before its JSON value does"},
		{`{"a" 1}`, nil, "unexpected character '1' after object key (line 1, column 6)"},
		{"{\n\"a\":\xef}", nil, "unexpected byte 0xEF looking for beginning of value (line 2, column 5)"},
		{"\xff\xfe{\x00}", nil, "UTF-16"},
		{"{\"a\":\"\xff\"}", nil, "not valid UTF-8: byte 0xFF at line 1, column 7"},
		{`{"a":1} {"b":2}`, nil, "data after its JSON value; send exactly one JSON object (found character '{') (line 1, column 9)"},
		{`{"a":1}x`, nil, "data after its JSON value"},
		{`{"a":1}]`, nil, "data after its JSON value"},
		{`{"a":1}}`, nil, "data after its JSON value"},
		{`{"a":1,"b":2,"a":3}`, nil, `field "a" is given more than once`},
		{`{"a":null,"a":3}`, nil, `field "a" is given more than once`},
		{`{"prompt":"x","pr\u006fmpt":"y"}`, nil, `field "prompt" is given more than once`},
	} {
		o, e := decodeObject([]byte(tc.body))
		if tc.refuse != "" {
			if e == nil || e.Code != apierr.CodeInvalidRequest || !strings.Contains(e.Message, tc.refuse) {
				t.Errorf("%q: %+v, want a refusal saying %q", tc.body, e, tc.refuse)
			} else if len(e.Details) == 0 {
				t.Errorf("%q: refusal %q has no details", tc.body, e.Message)
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

// BenchmarkDecodeObject holds decodeObject, on every create's path, to its
// cost: the duplicate-key and UTF-8 checks ride on the one walk of the keys.
func BenchmarkDecodeObject(b *testing.B) {
	body := []byte(`{"mode":"manual","prompt":"a red fox running through fresh snow at dawn, cinematic light","model":"wan-2.2-a14b","resolution":"720p","duration_seconds":5,"aspect_ratio":"16:9","seed":7,"negative_prompt":"blur","auto_fix":true,"image_urls":["https://example.com/a.png","https://example.com/b.png"],"name":"fox \u00e9","folder_id":null}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, e := decodeObject(body); e != nil {
			b.Fatal(e)
		}
	}
}

// FuzzDecodeObject holds walkObject to encoding/json: a body decodeObject
// takes, json.Unmarshal reads as the same fields and values; one it refuses
// with a valid object, has a key twice or invalid UTF-8.
func FuzzDecodeObject(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, ` {"a" : [1, {"b":"}"}] , "c":"\"" } `, `{"a":1,"a":2}`,
		`{"\u0061":1,"a":2}`, "{\"a\":\"\xff\"}", "\xef\xbb\xbf{\"a\":null}", `{"a":{"a":1,"a":2}}`, `[]`, `{"a":}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		o, e := decodeObject(body)
		var want map[string]json.RawMessage
		werr := json.Unmarshal(bytes.TrimSpace(bytes.TrimPrefix(body, utf8BOM)), &want)
		if e != nil {
			if werr == nil && want != nil && !strings.Contains(e.Message, "more than once") && !strings.Contains(e.Message, "UTF-8") {
				t.Fatalf("%q refused (%s), json.Unmarshal reads %v", body, e.Message, want)
			}
			return
		}
		if werr != nil || want == nil {
			t.Fatalf("%q accepted as %v, json.Unmarshal: %v", body, o, werr)
		}
		for k, v := range want {
			if string(v) == "null" {
				delete(want, k)
			}
		}
		if len(o) != len(want) {
			t.Fatalf("%q: %v, json.Unmarshal %v", body, o, want)
		}
		for k, v := range want {
			if !bytes.Equal(o[k], v) {
				t.Fatalf("%q field %q: %s, json.Unmarshal %s", body, k, o[k], v)
			}
		}
	})
}
