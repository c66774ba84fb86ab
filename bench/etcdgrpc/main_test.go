package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// TestPutLoop puts through the gRPC client against a real single-member etcd
// (Debian's etcd-server, 3.4) and checks that etcd holds exactly as many keys
// as the report says were written.
func TestPutLoop(t *testing.T) {
	bin, err := exec.LookPath("etcd")
	if err != nil {
		if os.Getenv("VIDFARM_REQUIRE_TOOLS") != "" {
			t.Fatal("etcd is not installed and VIDFARM_REQUIRE_TOOLS is set")
		}
		t.Skip("etcd is not installed")
	}
	client, peer := freeAddr(t), freeAddr(t)
	cmd := exec.Command(bin, "--name", "g", "--data-dir", t.TempDir(),
		"--listen-client-urls", "http://"+client, "--advertise-client-urls", "http://"+client,
		"--listen-peer-urls", "http://"+peer, "--initial-advertise-peer-urls", "http://"+peer,
		"--initial-cluster", "g=http://"+peer, "--log-level", "error")
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{"http://" + client}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The first put waits for the member to elect itself (within 20 s).
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := c.Put(ctx, "probe", "x"); err != nil {
		t.Fatalf("etcd did not take a put: %v\n%s", err, logs.String())
	}
	rep := putLoop(context.Background(), []*clientv3.Client{c, c}, 4, time.Second, 1024, nil)
	if rep.Created == 0 || len(rep.Failures) != 0 || rep.P50 <= 0 || rep.Max < rep.P99 {
		t.Fatalf("report %+v", rep)
	}
	got, err := c.Get(ctx, "bench/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	// A put cut off by the end of the run is not counted, though etcd may
	// have applied it: at most one per client.
	if got.Count < rep.Created || got.Count > rep.Created+4 {
		t.Fatalf("etcd holds %d keys, the report says %d puts succeeded", got.Count, rep.Created)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
