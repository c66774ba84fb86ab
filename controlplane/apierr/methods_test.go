package apierr

import "testing"

func TestMethodLabel(t *testing.T) {
	for _, tc := range []struct{ method, want string }{
		{"GET", "GET"}, {"HEAD", "HEAD"}, {"POST", "POST"}, {"PUT", "PUT"},
		{"PATCH", "PATCH"}, {"DELETE", "DELETE"}, {"OPTIONS", "OPTIONS"},
		// Methods are case-sensitive (RFC 9110, section 9.1): "get" is not GET.
		{"get", "other"}, {"WEIRDMETHOD123", "other"}, {"PROPFIND", "other"},
		{"CONNECT", "other"}, {"TRACE", "other"}, {"", "other"},
	} {
		if got := MethodLabel(tc.method); got != tc.want {
			t.Errorf("MethodLabel(%q) = %q, want %q", tc.method, got, tc.want)
		}
	}
}
