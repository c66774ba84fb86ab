package main

import (
	"context"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/bench/internal/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// TestPutLoop puts through the gRPC client against a real single-member etcd
// (Debian's etcd-server, 3.4) and checks that etcd holds exactly as many keys
// as the report says were written.
func TestPutLoop(t *testing.T) {
	url := etcdtest.Start(t)
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
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
