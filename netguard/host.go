package netguard

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// blockedHostnames are names that mean "this machine or its cloud" without DNS.
var blockedHostnames = []string{"localhost", "localhost.localdomain", "metadata", "metadata.google.internal", "instance-data"}

// privateSuffixes are domains that never name a public host.
var privateSuffixes = []string{".localhost", ".local", ".internal", ".localdomain", ".home.arpa"}

// normalHost is host as compared: without brackets, one trailing dot or
// surrounding space, in lower case.
func normalHost(host string) string {
	host = strings.TrimSpace(host)
	if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	}
	return strings.ToLower(strings.TrimSuffix(host, "."))
}

// ParseHostIP reads a URL host as an IP address in any spelling a C resolver
// (inet_aton) would accept: dotted quads, fewer parts (127.1), decimal
// (2130706433), octal (0177.0.0.1) and hex (0x7f.0.0.1) parts, and IPv6, with
// or without brackets, with a zone, a trailing dot or in upper case. canonical
// is true only for the plain dotted-quad and IPv6 forms.
func ParseHostIP(host string) (ip netip.Addr, canonical, ok bool) {
	host = normalHost(host)
	if a, err := netip.ParseAddr(host); err == nil {
		return a, true, true
	}
	parts := strings.Split(host, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false, false
	}
	vals := make([]uint64, len(parts))
	for i, p := range parts {
		v, ok := parseInetPart(p)
		if !ok {
			return netip.Addr{}, false, false
		}
		vals[i] = v
	}
	// The last part fills the remaining bytes, as inet_aton does.
	var n uint64
	for i, v := range vals[:len(vals)-1] {
		if v > 0xff {
			return netip.Addr{}, false, false
		}
		n |= v << (8 * (3 - i))
	}
	last := vals[len(vals)-1]
	if last >= 1<<(8*(5-len(vals))) {
		return netip.Addr{}, false, false
	}
	n |= last
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), false, true
}

func parseInetPart(p string) (uint64, bool) {
	if p == "" {
		return 0, false
	}
	base := 10
	switch {
	case strings.HasPrefix(p, "0x"):
		base, p = 16, p[2:]
		if p == "" {
			return 0, true // "0x" alone is 0 to inet_aton
		}
	case len(p) > 1 && p[0] == '0':
		base, p = 8, p[1:]
	}
	v, err := strconv.ParseUint(p, base, 32)
	return v, err == nil
}

// CheckHost applies the policy to a URL host without DNS: an IP address must
// be written plainly and be allowed by Blocked; a name must be a public,
// fully qualified ASCII name. A name that passes may still resolve to a
// refused address: Guard.CheckURL and the dial-time checks look at that.
func CheckHost(host string) (reason string, refused bool) {
	h := normalHost(host)
	if h == "" {
		return "the URL has no host", true
	}
	for _, r := range h {
		if r > 0x7e || r < 0x21 {
			return "the host has characters outside ASCII; write an international name in its punycode form (xn--…)", true
		}
	}
	if ip, canonical, ok := ParseHostIP(h); ok {
		if !canonical {
			return fmt.Sprintf("the host is an unusual spelling of the IP address %s; write addresses in dotted-decimal form", ip), true
		}
		return Blocked(ip)
	}
	for _, b := range blockedHostnames {
		if h == b {
			return "the host names this machine or its cloud's metadata service", true
		}
	}
	for _, suffix := range privateSuffixes {
		if strings.HasSuffix(h, suffix) {
			return "the host is in the private domain " + suffix, true
		}
	}
	dot := strings.LastIndexByte(h, '.')
	if dot < 0 {
		return fmt.Sprintf("the host %q is a single-label name; a public host has a domain (example.com)", h), true
	}
	// No public name ends in a numeric label: "1.2.3.999" or "0x7f.1.2.3.4" are
	// addresses that other resolvers may read their own way.
	if tld := h[dot+1:]; strings.HasPrefix(tld, "0x") || strings.Trim(tld, "0123456789") == "" {
		return "the host is an IP address in a form no resolver reads the same way; write addresses in dotted-decimal form", true
	}
	return "", false
}
