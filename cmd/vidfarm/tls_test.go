package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/admin"
)

// testCA is a throwaway certificate authority whose files live in a test's
// temporary directory.
type testCA struct {
	t      *testing.T
	dir    string
	cert   *x509.Certificate
	key    *ecdsa.PrivateKey
	caFile string
	serial int64
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	ca := &testCA{t: t, dir: t.TempDir(), serial: 1}
	ca.key = newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &ca.key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	if ca.cert, err = x509.ParseCertificate(der); err != nil {
		t.Fatal(err)
	}
	ca.caFile = ca.write(name+"-ca.pem", "CERTIFICATE", der)
	return ca
}

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func (ca *testCA) write(name, typ string, der []byte) string {
	p := filepath.Join(ca.dir, name)
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		ca.t.Fatal(err)
	}
	return p
}

// issue signs a certificate for 127.0.0.1 and localhost, good for serving
// and for presenting as a client (Raft peers are both), and returns its
// certificate and key files.
func (ca *testCA) issue(name string) (certFile, keyFile string) {
	ca.t.Helper()
	ca.serial++
	key := newKey(ca.t)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(ca.serial), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		ca.t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		ca.t.Fatal(err)
	}
	return ca.write(name+".pem", "CERTIFICATE", der), ca.write(name+"-key.pem", "PRIVATE KEY", kder)
}

func (ca *testCA) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// client is an HTTPS client that trusts only ca (and presents cert, if any).
func (ca *testCA) client(cert ...tls.Certificate) *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: ca.pool(), Certificates: cert, MinVersion: tls.VersionTLS12}}}
}

// tlsNode is one `vidfarm server` with TLS on every listener and Raft mutual TLS.
type tlsNode struct {
	*proc
	id                         string
	public, adminURL, agentURL string
	raft                       string
	cl                         *admin.Client
}

// tlsServerArgs are the flags of a node whose listener certificate comes from
// ca and whose Raft certificate comes from raftCA.
func tlsServerArgs(t *testing.T, id string, ca, raftCA *testCA, extra ...string) []string {
	cert, key := ca.issue(id)
	rcert, rkey := raftCA.issue(id + "-raft")
	return append([]string{"server", "--node-id", id, "--data-dir", filepath.Join(t.TempDir(), id),
		"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--raft-listen", "127.0.0.1:0", "--agent-listen", "127.0.0.1:0",
		"--admin-token", e2eAdminToken, "--agent-token", e2eAgentToken, "--rate-limits=false", "--blob-secret", strings.Repeat("ab", 16),
		"--tls-cert", cert, "--tls-key", key, "--tls-ca", ca.caFile,
		"--raft-tls-cert", rcert, "--raft-tls-key", rkey, "--raft-tls-ca", raftCA.caFile,
		"--lease-duration", e2eLease.String(), "--heartbeat-interval", e2eHeartbeat.String()}, extra...)
}

func startTLSNode(t *testing.T, id string, ca *testCA, extra ...string) *tlsNode {
	t.Helper()
	p, ready := startProc(t, "server "+id, tlsServerArgs(t, id, ca, ca, extra...), nil, "control plane ready")
	n := &tlsNode{proc: p, id: id, raft: ready["raft"].(string)}
	n.public = "https://" + ready["public"].(string)
	n.adminURL = "https://" + ready["admin"].(string)
	n.agentURL = "https://" + ready["agent"].(string)
	if ready["tls"] != true || ready["raft_mutual_tls"] != true {
		t.Fatalf("node %s ready without TLS: %v", id, ready)
	}
	n.cl = &admin.Client{Server: n.adminURL, Token: e2eAdminToken, HTTP: ca.client()}
	return n
}

// TestTLSSingleNode: every listener speaks only https with the operator's
// certificate; the admin CLI and an agent trust it through --ca-file, and
// the agent registers, leases and finishes a render over TLS.
func TestTLSSingleNode(t *testing.T) {
	requireE2E(t)
	ca := newTestCA(t, "farm")
	n := startTLSNode(t, "n1", ca)
	stranger := &http.Client{Timeout: 10 * time.Second}
	for _, base := range []string{n.public, n.adminURL, n.agentURL} {
		resp, err := ca.client().Get(base + "/v1")
		if err != nil {
			t.Fatalf("GET %s/v1 over https: %v", base, err)
		}
		resp.Body.Close()
		if resp.TLS == nil || resp.TLS.Version != tls.VersionTLS13 {
			t.Fatalf("%s: want TLS 1.3, got %+v", base, resp.TLS)
		}
		plain := "http://" + strings.TrimPrefix(base, "https://") + "/v1"
		resp, err = stranger.Get(plain)
		if err != nil {
			t.Fatalf("GET %s: %v", plain, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "HTTPS server") {
			t.Fatalf("plain http to %s: %d %q, want 400 refusal", plain, resp.StatusCode, body)
		}
		if _, err := stranger.Get(base + "/v1"); err == nil || !strings.Contains(err.Error(), "unknown authority") {
			t.Fatalf("https to %s without the CA: %v, want an unknown-authority error", base, err)
		}
	}
	if resp, err := ca.client().Get(n.public + "/v1"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1 over https: %v %v", resp, err)
	}

	cli := func(args ...string) (string, error) {
		full := append([]string{"admin", "--server", n.adminURL, "--admin-token", e2eAdminToken}, args...)
		out, err := exec.Command(vidfarmBinary(t), full...).CombinedOutput()
		return string(out), err
	}
	if out, err := cli("status"); err == nil || !strings.Contains(out, "unknown authority") {
		t.Fatalf("admin CLI without --ca-file: %v %s, want a certificate error", err, out)
	}
	out, err := cli("--ca-file", ca.caFile, "account", "create", "--name", "tls", "--plan", "pro", "--credits", "100")
	if err != nil || !strings.Contains(out, "api_key") {
		t.Fatalf("admin CLI with --ca-file: %v %s", err, out)
	}
	acct, err := n.cl.CreateAccount(context.Background(), "tls-agent", "pro", 100)
	if err != nil {
		t.Fatal(err)
	}

	agentArgs := []string{"agent", "--server", n.agentURL, "--token", e2eAgentToken, "--virtual-gpus", "4",
		"--work-dir", filepath.Join(t.TempDir(), "work"), "--drain-timeout", "1s"}
	untrusting, _ := startProc(t, "agent without --ca-file", append(agentArgs, "--name", "untrusting"), nil, "cannot register with the control plane; retrying")
	untrusting.kill()
	if !strings.Contains(untrusting.stderr.String(), "unknown authority") {
		t.Fatalf("agent without the CA should say why it cannot register:\n%s", untrusting.stderr)
	}
	startProc(t, "agent", append(agentArgs, "--name", "trusting", "--ca-file", ca.caFile), nil, "registered")

	hc := ca.client()
	status, v := callJSON(t, hc, http.MethodPost, n.public+"/v1/videos", acct.APIKey, manualBody("a lighthouse over TLS", ""))
	if status != http.StatusCreated {
		t.Fatalf("create video over https: %d %v", status, v)
	}
	id := v["id"].(string)
	eventually(t, 3*time.Minute, "the video rendered by the agent over TLS", func() bool {
		_, v = callJSON(t, hc, http.MethodGet, n.public+"/v1/videos/"+id, acct.APIKey, "")
		if v["status"] == "failed" {
			t.Fatalf("video failed: %v", v)
		}
		return v["status"] == "completed"
	})
}

// callJSON sends one request with an API key and decodes the JSON answer.
func callJSON(t *testing.T, hc *http.Client, method, url, key, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatalf("%s %s: %d, not JSON: %v", method, url, resp.StatusCode, err)
	}
	return resp.StatusCode, m
}

// TestDevRefusesTLS: the embedded farm's own agent and admin client speak
// plain http, so `vidfarm dev` says so instead of starting half-broken.
func TestDevRefusesTLS(t *testing.T) {
	for _, args := range [][]string{
		{"--tls-cert", "node.pem", "--tls-key", "node-key.pem"},
		{"--raft-tls-ca", "ca.pem"},
	} {
		err := runDev(append([]string{"--data-dir", t.TempDir()}, args...))
		if err == nil || !strings.Contains(err.Error(), "vidfarm server") {
			t.Fatalf("dev %v: %v, want a refusal naming vidfarm server", args, err)
		}
	}
}
