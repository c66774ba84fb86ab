// Package etcdtest starts a real single-member etcd for the tests of the
// etcd anchors: bench's (the JSON gateway) and bench/etcdgrpc's (etcd's own
// client, a module of its own so that the main one does not pull gRPC).
package etcdtest

import (
	"bytes"
	"net"
	"net/http"
	"os"
	"os/exec"
	"testing"
	"time"
)

// Start runs etcd (Debian's etcd-server) on loopback ports in a temporary
// directory until the test ends, and returns its client URL once it answers
// /health. Without the binary the test skips, or fails where
// VIDFARM_REQUIRE_TOOLS is set (make test).
func Start(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("etcd")
	if err != nil {
		if os.Getenv("VIDFARM_REQUIRE_TOOLS") != "" {
			t.Fatal("etcd is not installed and VIDFARM_REQUIRE_TOOLS is set (scripts/deps.sh installs etcd-server)")
		}
		t.Skip("etcd is not installed")
	}
	client, peer := freeAddr(t), freeAddr(t)
	cmd := exec.Command(bin, "--name", "bench", "--data-dir", t.TempDir(),
		"--listen-client-urls", "http://"+client, "--advertise-client-urls", "http://"+client,
		"--listen-peer-urls", "http://"+peer, "--initial-advertise-peer-urls", "http://"+peer,
		"--initial-cluster", "bench=http://"+peer, "--log-level", "error")
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	url := "http://" + client
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(url + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return url
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("etcd did not answer /health: %v\n%s", err, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
