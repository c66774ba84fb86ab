package httpguard

import (
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
)

// Listener is a net.Listener that lets one client address hold at most Max
// connections open at once. A connection over the limit is closed as soon as
// it is accepted, with a reset and before a byte of it is read or a TLS
// handshake is spent on it: the client sees a refused connection, which its
// HTTP library reports and which it may retry once one of its other
// connections is done. (Answering 429 would mean reading the request, and
// over TLS a handshake, for each connection: the work the limit is there to
// avoid.)
//
// Addresses are counted by IP, not IP and port; IPv6 addresses by their /64,
// the smallest block a host is usually given, so that one host cannot step
// around the limit by rotating through its own addresses.
type Listener struct {
	net.Listener
	max    int
	exempt func(netip.Addr) bool

	mu      sync.Mutex
	open    map[netip.Addr]int
	refused atomic.Uint64
}

// LimitConns wraps ln so that one client address holds at most limit
// connections; exempt (nil: none) names the addresses the limit does not
// apply to, such as a reverse proxy's or the cluster's other nodes'.
func LimitConns(ln net.Listener, limit int, exempt func(netip.Addr) bool) *Listener {
	if exempt == nil {
		exempt = func(netip.Addr) bool { return false }
	}
	return &Listener{Listener: ln, max: limit, exempt: exempt, open: map[netip.Addr]int{}}
}

// Refused is how many connections have been closed for being over the limit.
func (l *Listener) Refused() uint64 { return l.refused.Load() }

// Open is how many connections the address addr (its /64 for IPv6) holds.
func (l *Listener) Open(addr netip.Addr) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open[clientKey(addr)]
}

// Accept returns the next connection within the limit; those over it are
// closed here and never returned.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		addr, ok := remoteIP(c.RemoteAddr())
		if !ok || l.exempt(addr) {
			return c, nil
		}
		key := clientKey(addr)
		if l.acquire(key) {
			return &limitedConn{Conn: c, release: func() { l.release(key) }}, nil
		}
		l.refused.Add(1)
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // a reset: no TIME_WAIT left behind for each refusal
		}
		_ = c.Close()
	}
}

func (l *Listener) acquire(key netip.Addr) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[key] >= l.max {
		return false
	}
	l.open[key]++
	return true
}

func (l *Listener) release(key netip.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[key]--; l.open[key] <= 0 {
		delete(l.open, key)
	}
}

// remoteIP is the IP of a connection's peer, IPv4-mapped addresses as IPv4.
func remoteIP(a net.Addr) (netip.Addr, bool) {
	var ap netip.AddrPort
	if t, ok := a.(*net.TCPAddr); ok {
		ap = t.AddrPort()
	} else {
		var err error
		if ap, err = netip.ParseAddrPort(a.String()); err != nil {
			return netip.Addr{}, false
		}
	}
	ip := ap.Addr().Unmap().WithZone("")
	return ip, ip.IsValid()
}

// clientKey is what the limit counts: the address itself, or the /64 of an
// IPv6 address.
func clientKey(ip netip.Addr) netip.Addr {
	ip = ip.Unmap().WithZone("")
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.Addr()
	}
	return ip
}

// limitedConn gives its place back when it is closed, once.
type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// CloseWrite lets net/http half-close the connection after an answer that
// leaves part of a request unread, so the client reads the answer before the
// reset.
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// ReadFrom keeps sendfile for files net/http serves on the connection.
func (c *limitedConn) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{c.Conn}, r)
}
