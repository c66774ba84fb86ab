package server_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/admin"
	"github.com/vidfarm/vidfarm/controlplane/api"
	"github.com/vidfarm/vidfarm/controlplane/server"
)

// BenchmarkFailover measures, per iteration, the time from the leader of a
// three-node cluster going away to the first write acknowledged through a
// surviving node (a new account created through its admin listener, which a
// follower forwards to the new leader). Reported as failover-ms.
//
//	go test -run '^$' -bench Failover -benchtime 5x ./controlplane/server/
func BenchmarkFailover(b *testing.B) {
	var total time.Duration
	for range b.N {
		b.StopTimer()
		nodes := startCluster(b, server.TLSConfig{})
		b.StartTimer()
		began := time.Now()
		_ = nodes[0].Close(context.Background())
		cl := &admin.Client{Server: "http://" + nodes[1].AdminAddr(), Token: "bench-admin-token",
			HTTP: &http.Client{Timeout: 2 * time.Second}}
		for {
			if _, err := cl.CreateAccount(context.Background(), "after-failover", "pro", 1); err == nil {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		total += time.Since(began)
		b.StopTimer()
		for _, n := range nodes[1:] {
			_ = n.Close(context.Background())
		}
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "failover-ms")
}

// startCluster starts three nodes on loopback, with the TLS files of tls.
func startCluster(b *testing.B, tls server.TLSConfig) []*server.Server {
	b.Helper()
	blobs := b.TempDir()
	var nodes []*server.Server
	for i, id := range []string{"n1", "n2", "n3"} {
		cfg := server.Config{
			DataDir: b.TempDir(), NodeID: id, Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0",
			RaftListen: "127.0.0.1:0", AdminToken: "bench-admin-token", BlobDir: blobs, TLS: tls,
			Limits: api.Limits{Disabled: true}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		}
		if i > 0 {
			cfg.Join = nodes[0].AdminURL()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		s, err := server.Start(ctx, cfg)
		cancel()
		if err != nil {
			b.Fatalf("start %s: %v", id, err)
		}
		nodes = append(nodes, s)
	}
	return nodes
}
