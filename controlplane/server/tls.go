package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"

	"github.com/vidfarm/vidfarm/controlplane/tlsconf"
)

// TLSConfig names the certificate files of a node. All are PEM files; the
// certificates are re-read when their files change.
type TLSConfig struct {
	// CertFile and KeyFile are presented on the public, admin and agent
	// listeners; both empty means those listeners speak plain http.
	CertFile, KeyFile string
	// CAFile is the bundle this node trusts when it calls other nodes
	// (forwarding to the leader, joining); empty means the system's CAs.
	CAFile string
	// RaftCertFile, RaftKeyFile and RaftCAFile turn on mutual TLS for Raft:
	// this node presents RaftCertFile and accepts only peers whose
	// certificate RaftCAFile signed. All three, or none (plain TCP).
	RaftCertFile, RaftKeyFile, RaftCAFile string
	// RaftInsecure lets Raft run plain TCP on an address other machines
	// can reach (checkPlainRaft): for a network that only the control-plane
	// nodes reach, said so on purpose.
	RaftInsecure bool
}

// raftTLS reports whether Raft runs over mutual TLS.
func (c TLSConfig) raftTLS() bool {
	return c.RaftCertFile != "" || c.RaftKeyFile != "" || c.RaftCAFile != ""
}

// ErrPlainRaft refuses plain Raft on an address other machines can reach.
var ErrPlainRaft = errors.New("plain Raft on a reachable address")

// checkPlainRaft refuses a Raft listener other machines can reach that runs
// plain TCP, unless c.RaftInsecure says so on purpose. Raft's TCP transport
// authenticates nothing: any host that reaches the port can claim a higher
// term, be followed as leader for a moment and commit any command (credits,
// accounts, keys), which a security audit did against a plain node. A
// loopback address is reachable from this machine only.
func checkPlainRaft(listen string, c TLSConfig, log *slog.Logger) error {
	if c.raftTLS() {
		return nil
	}
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return nil // the listen reports it, with the address
	}
	ip, err := netip.ParseAddr(host)
	if host == "localhost" || (err == nil && ip.IsLoopback()) {
		return nil
	}
	if !c.RaftInsecure {
		return fmt.Errorf("%w: --raft-listen %s is reachable from other machines and Raft over plain TCP authenticates nothing: "+
			"any host that reaches the port can take part in the consensus and write any state (accounts, credits, keys). "+
			"Give --raft-tls-cert, --raft-tls-key and --raft-tls-ca (mutual TLS, docs/cluster.md#tls), or, on a network only the "+
			"control-plane nodes can reach (a firewall, a Kubernetes NetworkPolicy), --raft-insecure", ErrPlainRaft, listen)
	}
	log.Warn("Raft runs plain TCP on an address other machines can reach (--raft-insecure): anything that reaches the port can write the state; keep it on a network only the control-plane nodes reach, or give --raft-tls-*",
		"raft_listen", listen)
	return nil
}

// tlsSettings are TLSConfig's files loaded.
type tlsSettings struct {
	server *tls.Config // nil: plain http listeners
	client *tls.Config // calls to other nodes
	raft   *tls.Config // nil: plain Raft
}

func loadTLS(c TLSConfig, log *slog.Logger) (tlsSettings, error) {
	var out tlsSettings
	var err error
	if c.CertFile != "" || c.KeyFile != "" {
		if out.server, err = tlsconf.Server(c.CertFile, c.KeyFile, log); err != nil {
			return out, fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
	}
	if out.client, err = tlsconf.Client(c.CAFile); err != nil {
		return out, fmt.Errorf("--tls-ca: %w", err)
	}
	if c.raftTLS() {
		if out.raft, err = tlsconf.Mutual(c.RaftCertFile, c.RaftKeyFile, c.RaftCAFile, log); err != nil {
			return out, fmt.Errorf("--raft-tls-cert/--raft-tls-key/--raft-tls-ca: %w", err)
		}
	}
	return out, nil
}

// scheme is how the listeners' default URLs start.
func (t tlsSettings) scheme() string {
	if t.server != nil {
		return "https://"
	}
	return "http://"
}

// prepare sets srv up for TLS when it is on: its certificate and a log for
// failed handshakes (a client not trusting us, or not speaking TLS at all).
func (t tlsSettings) prepare(srv *http.Server, name string, log *slog.Logger) {
	if t.server == nil {
		return
	}
	srv.TLSConfig = t.server.Clone()
	// HTTP/1.1 only, as over plain http: with HTTP/2 a write forwarded by a
	// follower took 15 ms instead of 4 (BenchmarkClusterWriteTLS).
	srv.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
	srv.ErrorLog = slog.NewLogLogger(log.With("listener", name).Handler(), slog.LevelWarn)
}

// serveOn runs srv on ln until it is shut down, over TLS when prepare set it up.
func serveOn(srv *http.Server, ln net.Listener) error {
	var err error
	if srv.TLSConfig != nil {
		err = srv.ServeTLS(ln, "", "")
	} else {
		err = srv.Serve(ln)
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// checkRaftAdvertise refuses a --raft-listen on every address (0.0.0.0,
// [::], :7000) without --raft-advertise: the other members need one address
// to dial, and Raft's transport would refuse it later, saying only that
// the bind address is not advertisable.
func checkRaftAdvertise(listen, advertise string) error {
	if advertise != "" {
		return nil
	}
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return nil // the listen reports it, with the address
	}
	if ip, err := netip.ParseAddr(host); host == "" || (err == nil && ip.IsUnspecified()) {
		return fmt.Errorf("--raft-listen %s listens on every address, so it names none the other members could dial: give --raft-advertise HOST:PORT, this node's address on the network the members share", listen)
	}
	return nil
}
