package bench

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// startEtcd runs a real single-member etcd on loopback ports in a temporary
// directory; without the binary the test skips, or fails where
// VIDFARM_REQUIRE_TOOLS is set (make test).
func startEtcd(t *testing.T) string {
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

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestRunEtcdPut puts against a real etcd and checks that etcd holds exactly
// as many keys as the report says were written.
func TestRunEtcdPut(t *testing.T) {
	url := startEtcd(t)
	rep, err := RunEtcdPut(context.Background(), EtcdConfig{Endpoints: []string{url}, Concurrency: 4, Duration: time.Second, ValueBytes: 1024})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Created == 0 || len(rep.Failures) != 0 || rep.P50 <= 0 || rep.Max < rep.P99 {
		t.Fatalf("report %+v", rep)
	}
	q, _ := json.Marshal(map[string]any{"key": base64.StdEncoding.EncodeToString([]byte("bench/")),
		"range_end": base64.StdEncoding.EncodeToString([]byte("bench0")), "count_only": true})
	resp, err := http.Post(url+"/v3/kv/range", "application/json", bytes.NewReader(q))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Count string `json:"count"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	// A put cut off by the end of the run is not counted, though etcd may
	// have applied it: at most one per client.
	n, err := strconv.ParseInt(out.Count, 10, 64)
	if err != nil || n < rep.Created || n > rep.Created+4 {
		t.Fatalf("etcd holds %s keys, the report says %d puts succeeded", out.Count, rep.Created)
	}
	if _, err := RunEtcdPut(context.Background(), EtcdConfig{Endpoints: []string{url}}); err == nil {
		t.Fatal("a config without clients or duration was accepted")
	}
}
