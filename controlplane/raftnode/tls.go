package raftnode

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// tlsStream is a raft.StreamLayer over mutual TLS: peers present a
// certificate signed by the cluster's CA or the handshake fails, on both
// ends. Failed handshakes are logged here, with the peer's address and
// the reason, because raft's own log shows only a decode error.
type tlsStream struct {
	net.Listener // the plain TCP listener; Accept wraps its connections
	cfg          *tls.Config
	advertise    net.Addr
	log          *slog.Logger
}

var _ raft.StreamLayer = (*tlsStream)(nil)

func newTLSStream(bind string, advertise net.Addr, cfg *tls.Config, log *slog.Logger) (*tlsStream, error) {
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, err
	}
	if advertise == nil {
		advertise = ln.Addr()
	}
	if tcp, ok := advertise.(*net.TCPAddr); !ok || tcp.IP == nil || tcp.IP.IsUnspecified() {
		ln.Close()
		return nil, fmt.Errorf("raft address %s is not one peers can dial: set an advertise address", advertise)
	}
	return &tlsStream{Listener: ln, cfg: cfg, advertise: advertise, log: log}, nil
}

// Accept returns the next connection; its handshake runs on the first read
// (in raft's per-connection goroutine) so a slow peer holds up no other.
func (s *tlsStream) Accept() (net.Conn, error) {
	c, err := s.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &handshakeLogged{Conn: tls.Server(c, s.cfg), log: s.log}, nil
}

// Addr is the address peers dial.
func (s *tlsStream) Addr() net.Addr { return s.advertise }

// Dial opens a mutual-TLS connection to a peer, checking its certificate
// against the CA and the address dialled.
func (s *tlsStream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c, err := s.dial(ctx, string(addr))
	if err != nil {
		s.log.Warn("raft peer refused: TLS connection failed (is its certificate signed by --raft-tls-ca and valid for its address?)", "peer", string(addr), "err", err)
		return nil, err
	}
	return c, nil
}

func (s *tlsStream) dial(ctx context.Context, addr string) (net.Conn, error) {
	d := tls.Dialer{NetDialer: &net.Dialer{}, Config: s.cfg}
	return d.DialContext(ctx, "tcp", addr)
}

// probe completes a handshake with addr and hangs up. It proves that addr
// presents a certificate the CA signed for that address; in TLS 1.3 whether
// the peer accepts ours shows only later, in that peer's own log.
func (s *tlsStream) probe(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := s.dial(ctx, addr)
	if err != nil {
		return err
	}
	return c.Close()
}

type handshakeLogged struct {
	*tls.Conn
	log  *slog.Logger
	once sync.Once
	err  error
}

func (c *handshakeLogged) Read(b []byte) (int, error) {
	c.once.Do(func() {
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		if c.err = c.Handshake(); c.err != nil {
			c.log.Warn("raft peer refused: TLS handshake failed (peers need a certificate signed by --raft-tls-ca)", "peer", c.RemoteAddr().String(), "err", c.err)
			return
		}
		_ = c.SetDeadline(time.Time{})
	})
	if c.err != nil {
		return 0, c.err
	}
	return c.Conn.Read(b)
}
