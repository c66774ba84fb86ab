package netguard

import "net/netip"

// blockedRanges is the one table of ranges no request may reach, with the
// reason shown to the person whose URL was refused. The first match decides,
// so a specific entry (a metadata address) comes before its wider range.
var blockedRanges = []struct {
	prefix netip.Prefix
	reason string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified address (0.0.0.0/8)"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private address (10.0.0.0/8)"},
	{netip.MustParsePrefix("100.100.100.200/32"), "cloud metadata address (100.100.100.200, carrier-grade NAT)"},
	{netip.MustParsePrefix("100.64.0.0/10"), "carrier-grade NAT address (100.64.0.0/10)"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback address (127.0.0.0/8)"},
	{netip.MustParsePrefix("169.254.169.254/32"), "cloud metadata address (169.254.169.254, link-local)"},
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
	{netip.MustParsePrefix("255.255.255.255/32"), "broadcast address (255.255.255.255)"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved address (240.0.0.0/4)"},

	{netip.MustParsePrefix("::/128"), "unspecified address (::)"},
	{netip.MustParsePrefix("::1/128"), "loopback address (::1)"},
	{netip.MustParsePrefix("::ffff:0:0:0/96"), "IPv4-translated address (::ffff:0:0:0/96)"},
	{netip.MustParsePrefix("::/96"), "IPv4-compatible address (::/96)"},
	{netip.MustParsePrefix("100::/64"), "discard-only address (100::/64)"},
	{netip.MustParsePrefix("2001::/32"), "Teredo address (2001::/32)"},
	{netip.MustParsePrefix("2001:2::/48"), "benchmarking address (2001:2::/48)"},
	{netip.MustParsePrefix("2001::/23"), "IETF protocol assignment (2001::/23)"},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation address (2001:db8::/32)"},
	{netip.MustParsePrefix("3fff::/20"), "documentation address (3fff::/20)"},
	{netip.MustParsePrefix("5f00::/16"), "segment-routing address (5f00::/16)"},
	{netip.MustParsePrefix("fd00:ec2::254/128"), "cloud metadata address (fd00:ec2::254, unique-local)"},
	{netip.MustParsePrefix("fc00::/7"), "unique-local address (fc00::/7)"},
	{netip.MustParsePrefix("fe80::/10"), "link-local address (fe80::/10)"},
	{netip.MustParsePrefix("fec0::/10"), "site-local address (fec0::/10)"},
	{netip.MustParsePrefix("ff00::/8"), "multicast address (ff00::/8)"},
}

// Prefixes that carry an IPv4 address inside an IPv6 one: the embedded
// address decides. globalUnicast is where every public IPv6 address lives.
var (
	nat64         = netip.MustParsePrefix("64:ff9b::/96")
	nat64Local    = netip.MustParsePrefix("64:ff9b:1::/48")
	sixToFour     = netip.MustParsePrefix("2002::/16")
	globalUnicast = netip.MustParsePrefix("2000::/3")
)

// Blocked says whether ip may not be reached, and why. It is the whole address
// policy: every check in vidfarm that decides on an address calls it.
func Blocked(ip netip.Addr) (reason string, blocked bool) {
	if !ip.IsValid() {
		return "not an IP address", true
	}
	if ip.Zone() != "" {
		return "scoped IPv6 address (zone " + ip.Zone() + ")", true
	}
	if ip.Is4In6() {
		if r, bad := Blocked(ip.Unmap()); bad {
			return "IPv4-mapped form of a " + r, true
		}
		return "", false
	}
	if ip.Is6() {
		if v4, layout, ok := embeddedIPv4(ip); ok {
			if r, bad := Blocked(v4); bad {
				return layout + " address embedding a " + r, true
			}
			return "", false
		} else if layout != "" {
			return layout, true
		}
	}
	for _, p := range blockedRanges {
		if p.prefix.Contains(ip) {
			return p.reason, true
		}
	}
	if ip.Is6() && !globalUnicast.Contains(ip) {
		return "reserved IPv6 address (outside the global unicast range 2000::/3)", true
	}
	return "", false
}

// embeddedIPv4 returns the IPv4 address a NAT64 or 6to4 address carries and
// the name of its layout. A local-use NAT64 address (64:ff9b:1::/48) is read
// only in the /96 layout; in any other its IPv4 address cannot be told, so ok
// is false and layout says why it is refused.
func embeddedIPv4(ip netip.Addr) (v4 netip.Addr, layout string, ok bool) {
	b := ip.As16()
	switch {
	case nat64.Contains(ip):
		return netip.AddrFrom4([4]byte(b[12:16])), "NAT64", true
	case nat64Local.Contains(ip):
		if b[6]|b[7]|b[8]|b[9]|b[10]|b[11] != 0 {
			return netip.Addr{}, "local-use NAT64 address (64:ff9b:1::/48) outside the 64:ff9b:1::/96 layout", false
		}
		return netip.AddrFrom4([4]byte(b[12:16])), "local-use NAT64", true
	case sixToFour.Contains(ip):
		return netip.AddrFrom4([4]byte(b[2:6])), "6to4", true
	}
	return netip.Addr{}, "", false
}
