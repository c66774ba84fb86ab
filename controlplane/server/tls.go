package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"

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
	if c.RaftCertFile != "" || c.RaftKeyFile != "" || c.RaftCAFile != "" {
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
