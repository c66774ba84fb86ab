package bench

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// EtcdConfig is a put benchmark against etcd, the anchor issue 13 compares
// creates with: the same closed loop and client count as RunCreate, each
// request one put of ValueBytes through etcd's JSON gateway
// (POST /v3/kv/put, https://etcd.io/docs/v3.5/dev-guide/api_grpc_gateway/),
// so both sides pay for HTTP and JSON.
type EtcdConfig struct {
	// Endpoints are etcd client URLs, e.g. http://127.0.0.1:2379, or every
	// member's: worker i puts through Endpoints[i mod len] (a follower
	// forwards the proposal to the leader, as a vidfarm follower forwards a
	// create).
	Endpoints   []string
	Concurrency int
	Duration    time.Duration
	ValueBytes  int
	Progress    func(done int64, elapsed time.Duration)
}

// RunEtcdPut runs the put benchmark; every put is a new key.
func RunEtcdPut(ctx context.Context, cfg EtcdConfig) (CreateReport, error) {
	if cfg.Concurrency < 1 || cfg.Duration <= 0 || cfg.ValueBytes < 1 || len(cfg.Endpoints) == 0 {
		return CreateReport{}, errors.New("bench: need an endpoint, concurrency ≥ 1, a duration and a value size")
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: cfg.Concurrency, MaxConnsPerHost: cfg.Concurrency}}
	urls := endpointURLs(cfg.Endpoints, "/v3/kv/put")
	value := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte("v"), cfg.ValueBytes))
	seq := make([]int, cfg.Concurrency)
	return ClosedLoop(ctx, cfg.Concurrency, cfg.Duration, cfg.Progress, func(ctx context.Context, w int) (string, error) {
		seq[w]++
		key := base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "bench/%d/%d", w, seq[w]))
		body, _ := json.Marshal(map[string]string{"key": key, "value": value})
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, urls[w%len(urls)], bytes.NewReader(body))
		if err != nil {
			return "", err
		}
		resp, err := client.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != http.StatusOK {
			return fmt.Sprintf("http_%d", resp.StatusCode), nil
		}
		return "", nil
	}), nil
}
