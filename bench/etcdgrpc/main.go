// Command etcdgrpc is the gRPC anchor of scripts/bench-anchors.sh: the same
// closed loop of 1 KB puts as `vidfarm bench etcd`, but through etcd's own Go
// client (go.etcd.io/etcd/client/v3) instead of the JSON gateway, so that the
// comparison with vidfarm's creates does not flatter vidfarm by making etcd
// pay for HTTP/1.1 and JSON. It prints the same report, and with -json the
// same JSON, as `vidfarm bench etcd`, timed by the same bench.ClosedLoop.
//
// It is its own module so that the main module does not pull in gRPC.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/vidfarm/vidfarm/bench"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "etcdgrpc:", err)
		os.Exit(1)
	}
}

func run() error {
	endpoint := flag.String("endpoint", "http://127.0.0.1:2379", "etcd client URL, or several separated by commas (every member's): the clients are spread over them")
	concurrency := flag.Int("concurrency", 64, "concurrent clients")
	duration := flag.Duration("duration", 10*time.Second, "how long to run")
	valueBytes := flag.Int("value-bytes", 1024, "size of each put's value")
	asJSON := flag.Bool("json", false, "print the report as JSON")
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", flag.Args())
	}
	endpoints, err := bench.ParseEndpoints(*endpoint)
	if err != nil {
		return err
	}
	if *concurrency < 1 || *duration <= 0 || *valueBytes < 1 {
		return fmt.Errorf("need concurrency ≥ 1, a duration and a value size")
	}
	// One client (one HTTP/2 connection) per endpoint, as a gRPC
	// application would hold one; worker i uses endpoint i mod n, the
	// spread `vidfarm bench etcd` uses.
	clients := make([]*clientv3.Client, len(endpoints))
	for i, e := range endpoints {
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{e}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			return fmt.Errorf("connect to %s: %w", e, err)
		}
		defer c.Close()
		clients[i] = c
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	// Fail before the run, not as a run of transport errors.
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	for i, c := range clients {
		if _, err := c.Put(cctx, "bench-grpc/probe", "x"); err != nil {
			cancel()
			return fmt.Errorf("put through %s: %w", endpoints[i], err)
		}
	}
	cancel()
	fmt.Fprintf(os.Stderr, "etcdgrpc: %d clients putting %d bytes for %s against %s\n", *concurrency, *valueBytes, *duration, strings.Join(endpoints, ","))
	rep := putLoop(ctx, clients, *concurrency, *duration, *valueBytes, bench.PutProgress(os.Stderr, *duration))
	fmt.Fprintln(os.Stderr)
	return rep.Write(os.Stdout, *asJSON)
}

// putLoop is the measured closed loop: every put a new key under bench/,
// worker w through clients[w mod n].
func putLoop(ctx context.Context, clients []*clientv3.Client, concurrency int, d time.Duration, valueBytes int, progress func(int64, time.Duration)) bench.CreateReport {
	value := string(bytes.Repeat([]byte("v"), valueBytes))
	seq := make([]int, concurrency)
	return bench.ClosedLoop(ctx, concurrency, d, progress, func(ctx context.Context, w int) (string, error) {
		seq[w]++
		_, err := clients[w%len(clients)].Put(ctx, fmt.Sprintf("bench/%d/%d", w, seq[w]), value)
		return "", err
	})
}
