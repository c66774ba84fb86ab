// Package netguard decides which outside addresses the control plane may reach on a
// client's behalf (webhook targets, brand-kit pages, avatar photos) and enforces it
// at every step: when a URL is registered, when its name is resolved, when a socket
// connects and when a redirect is followed.
//
// The rule is the same everywhere: the target must be https on a public unicast
// address. Loopback, private, carrier-grade NAT, link-local (cloud metadata lives
// there), unique-local, multicast, documentation and other reserved ranges are
// refused, whatever spelling the URL uses for them (decimal 2130706433, octal
// 0177.0.0.1, hex 0x7f.1, short 127.1, IPv4-mapped ::ffff:127.0.0.1, NAT64 and
// 6to4 addresses that embed a private IPv4) and whatever a name resolves to. The
// check is repeated on the addresses actually dialled, so a name that resolves to
// a public address at registration and to a private one later (DNS rebinding) is
// still refused.
//
// Guard.AllowPrivate is the development switch for tests and local farms: it lets
// plain http and private addresses through. Whoever turns it on logs it loudly.
package netguard

import (
	"net/netip"
	"strconv"
	"strings"
)

// blockedPrefixes are the ranges no request may reach, with the reason shown to
// the person whose URL was refused.
var blockedPrefixes = []struct {
	prefix netip.Prefix
	reason string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified address (0.0.0.0/8)"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private address (10.0.0.0/8)"},
	{netip.MustParsePrefix("100.64.0.0/10"), "carrier-grade NAT address (100.64.0.0/10)"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback address (127.0.0.0/8)"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local address (169.254.0.0/16, cloud metadata)"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private address (172.16.0.0/12)"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignment (192.0.0.0/24)"},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation address (192.0.2.0/24)"},
	{netip.MustParsePrefix("192.88.99.0/24"), "6to4 relay anycast (192.88.99.0/24)"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private address (192.168.0.0/16)"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking address (198.18.0.0/15)"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation address (198.51.100.0/24)"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation address (203.0.113.0/24)"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast address (224.0.0.0/4)"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved address (240.0.0.0/4, broadcast)"},
	{netip.MustParsePrefix("::/128"), "unspecified address (::)"},
	{netip.MustParsePrefix("::1/128"), "loopback address (::1)"},
	{netip.MustParsePrefix("::/96"), "IPv4-compatible address (::/96)"},
	{netip.MustParsePrefix("100::/64"), "discard-only address (100::/64)"},
	{netip.MustParsePrefix("2001::/32"), "Teredo address (2001::/32)"},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation address (2001:db8::/32)"},
	{netip.MustParsePrefix("fc00::/7"), "unique-local address (fc00::/7)"},
	{netip.MustParsePrefix("fe80::/10"), "link-local address (fe80::/10)"},
	{netip.MustParsePrefix("fec0::/10"), "site-local address (fec0::/10)"},
	{netip.MustParsePrefix("ff00::/8"), "multicast address (ff00::/8)"},
}

// Translation prefixes carry an IPv4 address inside an IPv6 one; the embedded
// address decides.
var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	nat64Loc  = netip.MustParsePrefix("64:ff9b:1::/48")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// Blocked says whether ip may not be reached, and why.
func Blocked(ip netip.Addr) (reason string, blocked bool) {
	if !ip.IsValid() {
		return "not an IP address", true
	}
	if ip.Zone() != "" {
		return "scoped IPv6 address (zone " + ip.Zone() + ")", true
	}
	ip = ip.Unmap() // ::ffff:127.0.0.1 is 127.0.0.1
	if ip.Is6() {
		b := ip.As16()
		switch {
		case nat64.Contains(ip), nat64Loc.Contains(ip):
			if r, bad := Blocked(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})); bad {
				return "NAT64 address embedding a " + r, true
			}
		case sixToFour.Contains(ip):
			if r, bad := Blocked(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})); bad {
				return "6to4 address embedding a " + r, true
			}
		}
	}
	for _, p := range blockedPrefixes {
		if p.prefix.Contains(ip) {
			return p.reason, true
		}
	}
	return "", false
}

// parseHostIP reads a URL host as an IP address in any spelling a C resolver
// (inet_aton) would accept: dotted quads, fewer parts (127.1), decimal
// (2130706433), octal (0177.0.0.1) and hex (0x7f.0.0.1) parts, and bracketed
// IPv6. canonical is false for every spelling but the plain dotted quad or IPv6
// form, which the guard refuses outright: no legitimate webhook needs one.
func parseHostIP(host string) (ip netip.Addr, canonical, ok bool) {
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
	case strings.HasPrefix(p, "0x") || strings.HasPrefix(p, "0X"):
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
