package main

import (
	"net/netip"
	"testing"

	"github.com/vidfarm/vidfarm/agent"
	"github.com/vidfarm/vidfarm/controlplane/netguard"
)

// The agent fetches client-supplied addresses (input images, avatar photos)
// under its own address check, since it may not import the control plane's
// guard; the two must agree, the agent only ever stricter (it refuses NAT64
// and 6to4 addresses whole, the guard those that embed a blocked IPv4
// address).
func TestAgentInputCheckMatchesNetguard(t *testing.T) {
	check := func(ip netip.Addr, stricterOK bool) {
		t.Helper()
		_, guard := netguard.Blocked(ip)
		got := agent.BlockedInputAddr(ip)
		if got != guard && !(stricterOK && got) {
			t.Errorf("%s: agent blocks %v, netguard %v", ip, got, guard)
		}
	}
	for _, s := range []string{
		"0.0.0.1", "10.1.2.3", "100.64.0.1", "127.0.0.1", "169.254.169.254", "172.16.0.1", "172.31.255.254",
		"192.0.0.8", "192.0.2.10", "192.88.99.1", "192.168.1.1", "198.18.0.1", "198.51.100.7", "203.0.113.9",
		"224.0.0.251", "239.255.255.250", "240.0.0.1", "255.255.255.255", "8.8.8.8", "1.1.1.1", "93.184.215.14",
		"::", "::1", "::10.0.0.1", "100::1", "2001::1", "2001:db8::1", "fc00::1", "fd00:ec2::254", "fe80::1",
		"fec0::1", "ff02::1", "::ffff:127.0.0.1", "::ffff:8.8.8.8", "2606:4700::6810:85", "2a00:1450:4001::200e",
		"fe80::1%eth0",
	} {
		check(netip.MustParseAddr(s), false)
	}
	for _, s := range []string{"64:ff9b::a00:1", "64:ff9b::808:808", "64:ff9b:1::1", "2002:a00:1::1", "2002:808:808::1"} {
		check(netip.MustParseAddr(s), true)
	}
	// Every IPv4 /16, at three places in it.
	for a := range 256 {
		for b := range 256 {
			for _, c := range []byte{0, 99, 255} {
				check(netip.AddrFrom4([4]byte{byte(a), byte(b), c, 1}), false)
			}
		}
	}
}
