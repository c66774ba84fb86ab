// Package netguard is vidfarm's one address policy: which outside addresses the
// farm may reach on a client's behalf, and the checks that enforce it. It is a
// leaf package (standard library only) shared by the control plane and the
// agent, so the API, the control plane's fetchers and the render nodes refuse
// exactly the same addresses:
//
//   - the control plane's API checks every address a client gives (webhook
//     targets, video image fields, brand pages, logo and avatar photo URLs)
//     with Guard.CheckURL, names resolved, and answers 400 invalid_url;
//   - the control plane's fetchers (webhook deliveries, brand pages) reach
//     them through Guard.Client and Guard.Fetch, which check again at every
//     connection and redirect;
//   - the agent checks input images, logos and avatar photos with
//     Guard.CheckSyntax before it fetches them, and its dialer refuses every
//     address Blocked refuses at connect time.
//
// The rule is the same everywhere: https (http only under the development
// switch) to a public unicast address. Blocked holds the one table of refused
// ranges: unspecified, loopback, private, carrier-grade NAT, link-local (cloud
// metadata lives there), the cloud metadata addresses themselves, IETF protocol
// assignments, documentation, benchmarking, 6to4 relay, multicast, reserved and
// broadcast IPv4; and unspecified, loopback, IPv4-compatible (::/96),
// IPv4-translated (::ffff:0:0:0/96), discard-only, Teredo, IETF protocol
// assignments, documentation, segment-routing, unique-local, link-local,
// site-local, multicast and every other address outside the global unicast
// range 2000::/3 in IPv6. Addresses that carry an IPv4 address (IPv4-mapped
// ::ffff:a.b.c.d, NAT64 64:ff9b::/96 and 64:ff9b:1::/96, 6to4 2002::/16) are
// judged by the IPv4 address inside. Zoned (scoped) addresses are refused.
//
// CheckHost reads a URL host in every spelling a resolver or a browser might
// accept (inet_aton's decimal 2130706433, octal 0177.0.0.1, hex 0x7f.1 and
// short 127.1 forms, bracketed IPv6 with zones, trailing dots, upper case) and
// refuses unusual IP spellings outright, names of this machine or its cloud
// (localhost, metadata.google.internal, .local, .internal …), single-label
// names, names ending in a numeric label and names outside ASCII (international
// names travel as punycode). A name that resolves to a refused address is
// refused too, and the check is repeated on the addresses actually dialled, so
// a name that is public when registered and private later (DNS rebinding) is
// still refused.
//
// Guard.AllowPrivate is the development switch for tests and local farms: it
// lets private addresses through (and plain http, unless Guard.HTTPSOnly).
// Whoever turns it on logs it loudly.
package netguard
