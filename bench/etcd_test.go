package bench

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/bench/internal/etcdtest"
)

// TestRunEtcdPut puts against a real etcd and checks that etcd holds exactly
// as many keys as the report says were written.
func TestRunEtcdPut(t *testing.T) {
	url := etcdtest.Start(t)
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
