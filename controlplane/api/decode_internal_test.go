package api

import (
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
