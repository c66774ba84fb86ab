package bench

import (
	"slices"
	"testing"
)

func TestParseEndpoints(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string // nil: an error
	}{
		{"http://127.0.0.1:2379", []string{"http://127.0.0.1:2379"}},
		{"http://a:1/, https://b:2", []string{"http://a:1", "https://b:2"}},
		{"http://a:1,http://b:2,http://c:3", []string{"http://a:1", "http://b:2", "http://c:3"}},
		{"http://a:1/base", []string{"http://a:1/base"}},
		{"", nil},
		{"http://a:1,", nil},
		{"127.0.0.1:2379", nil},
		{"ftp://a:1", nil},
		{"http://", nil},
		{"http://a:1?x=1", nil},
		{"http://u:p@a:1", nil},
		{"http://a:1,http://a:1/", nil},
		{"http://a:1 ,:bad", nil},
	} {
		got, err := ParseEndpoints(c.in)
		if c.want == nil {
			if err == nil {
				t.Errorf("ParseEndpoints(%q) = %v, want an error", c.in, got)
			}
			continue
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("ParseEndpoints(%q) = %v, %v, want %v", c.in, got, err, c.want)
		}
	}
}
