// Package tlsconf owns how a control-plane node speaks TLS: the server
// settings of its public, admin and agent listeners, the client settings it
// uses to call other nodes (forwarding, join), and the mutual-TLS settings of
// the Raft transport. Certificates come from PEM files and are re-read when
// the files change, so an operator renews them without a restart.
package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// ErrConfig means the TLS files or flags do not make a usable configuration.
var ErrConfig = errors.New("tls configuration")

// modern is the floor every vidfarm TLS config starts from: TLS 1.2 at least
// (1.3 is preferred by Go whenever both ends speak it) and, for 1.2, only
// AEAD suites with forward secrecy.
func modern() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		CipherSuites: []uint16{
			tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
			tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
			tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
		},
	}
}

// Server returns the settings of a listener that presents the certificate in
// certFile (with its chain) and keyFile.
func Server(certFile, keyFile string, log *slog.Logger) (*tls.Config, error) {
	kp, err := NewKeyPair(certFile, keyFile, log)
	if err != nil {
		return nil, err
	}
	c := modern()
	c.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return kp.Certificate() }
	return c, nil
}

// Client returns the settings for calling other nodes: the CAs in caFile are
// trusted, or the system's when caFile is empty.
func Client(caFile string) (*tls.Config, error) {
	c := modern()
	if caFile == "" {
		return c, nil
	}
	pool, err := CAPool(caFile)
	if err != nil {
		return nil, err
	}
	c.RootCAs = pool
	return c, nil
}

// Mutual returns settings for a link where both ends present a certificate
// signed by the CA in caFile and refuse any other: the Raft transport. The
// one config serves both sides: as a server it asks for and checks the
// client's certificate, as a client it presents its own and checks the
// server's (host name included, taken from the address dialled).
func Mutual(certFile, keyFile, caFile string, log *slog.Logger) (*tls.Config, error) {
	if certFile == "" || keyFile == "" || caFile == "" {
		return nil, fmt.Errorf("%w: mutual TLS needs a certificate, its key and the CA that signs every peer's certificate", ErrConfig)
	}
	kp, err := NewKeyPair(certFile, keyFile, log)
	if err != nil {
		return nil, err
	}
	pool, err := CAPool(caFile)
	if err != nil {
		return nil, err
	}
	c := modern()
	c.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return kp.Certificate() }
	c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return kp.Certificate() }
	c.ClientAuth = tls.RequireAndVerifyClientCert
	c.ClientCAs = pool
	c.RootCAs = pool
	return c, nil
}

// CAPool reads the PEM certificates in file into a pool.
func CAPool(file string) (*x509.CertPool, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("%w: read CA bundle: %w", ErrConfig, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%w: CA bundle %s holds no PEM certificate", ErrConfig, file)
	}
	return pool, nil
}

// KeyPair is a certificate and key read from files and read again when
// either file's modification time changes (checked at most once a second,
// on a handshake), so renewed certificates take effect without a restart.
// A renewal that does not load keeps the previous pair in service.
type KeyPair struct {
	certFile, keyFile string
	log               *slog.Logger

	mu      sync.Mutex
	cert    *tls.Certificate
	stamp   [2]time.Time
	checked time.Time
}

// NewKeyPair loads the pair, failing when it does not load now.
func NewKeyPair(certFile, keyFile string, log *slog.Logger) (*KeyPair, error) {
	if certFile == "" || keyFile == "" {
		return nil, fmt.Errorf("%w: a certificate needs both its file and its key file", ErrConfig)
	}
	if log == nil {
		log = slog.Default()
	}
	kp := &KeyPair{certFile: certFile, keyFile: keyFile, log: log}
	stamp, err := kp.stamps()
	if err != nil {
		return nil, err
	}
	if err := kp.load(stamp); err != nil {
		return nil, err
	}
	return kp, nil
}

// Certificate is the current certificate, reloaded first if its files changed.
func (kp *KeyPair) Certificate() (*tls.Certificate, error) {
	kp.mu.Lock()
	defer kp.mu.Unlock()
	if now := time.Now(); now.Sub(kp.checked) >= time.Second {
		kp.checked = now
		if stamp, err := kp.stamps(); err == nil && stamp != kp.stamp {
			if err := kp.load(stamp); err != nil {
				// Files caught half-written are retried on the next check.
				kp.log.Error("certificate files changed but do not load; still serving the previous certificate", "cert", kp.certFile, "err", err)
			} else {
				kp.log.Info("certificate reloaded", "cert", kp.certFile, "not_after", kp.cert.Leaf.NotAfter)
			}
		}
	}
	return kp.cert, nil
}

func (kp *KeyPair) stamps() ([2]time.Time, error) {
	var out [2]time.Time
	for i, f := range []string{kp.certFile, kp.keyFile} {
		st, err := os.Stat(f)
		if err != nil {
			return out, fmt.Errorf("%w: %w", ErrConfig, err)
		}
		out[i] = st.ModTime()
	}
	return out, nil
}

func (kp *KeyPair) load(stamp [2]time.Time) error {
	c, err := tls.LoadX509KeyPair(kp.certFile, kp.keyFile)
	if err != nil {
		return fmt.Errorf("%w: load %s and %s: %w", ErrConfig, kp.certFile, kp.keyFile, err)
	}
	kp.cert, kp.stamp = &c, stamp
	return nil
}
