package bench

import (
	"fmt"
	"net/url"
	"strings"
)

// ParseEndpoints reads a comma-separated list of base URLs, such as the client
// URLs of every member of a cluster, for a closed loop that spreads its
// workers over them (worker i talks to endpoint i mod n). Each must be an
// absolute http or https URL with a host and nothing after the path; a
// trailing slash is dropped. A repeated endpoint is refused because it would
// silently give one member twice the clients of the others.
func ParseEndpoints(list string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, raw := range strings.Split(list, ",") {
		s := strings.TrimRight(strings.TrimSpace(raw), "/")
		if s == "" {
			return nil, fmt.Errorf("bench: empty endpoint in %q", list)
		}
		u, err := url.Parse(s)
		if err != nil {
			return nil, fmt.Errorf("bench: endpoint %q: %w", s, err)
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			return nil, fmt.Errorf("bench: endpoint %q is not an http(s) URL like http://127.0.0.1:2379", s)
		}
		if seen[s] {
			return nil, fmt.Errorf("bench: endpoint %q given twice", s)
		}
		seen[s] = true
		out = append(out, s)
	}
	return out, nil
}

// endpointURLs is path on each of bases (a trailing slash of a base
// dropped, for a config built by hand rather than by ParseEndpoints): the
// URL a closed loop's worker w uses is the (w mod len)th.
func endpointURLs(bases []string, path string) []string {
	urls := make([]string, len(bases))
	for i, b := range bases {
		urls[i] = strings.TrimRight(b, "/") + path
	}
	return urls
}
