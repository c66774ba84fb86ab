#!/usr/bin/env bash
# make bench: the long benchmarks. Starts a single-node control plane with fsync on
# in a temporary data directory and drives POST /v1/videos with 64 concurrent
# clients, then runs the Go benchmarks and times the farm simulator. Figures go in the
# README.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=./bin/vidfarm
dir=$(mktemp -d)
token=bench-$RANDOM$RANDOM
trap 'kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; rm -rf "$dir"' EXIT

# Rate limits are off: the contract caps one account at 6 creates a minute, and
# this measures the create path itself (auth, validation, one Raft apply, fsync).
$bin server --data-dir "$dir" --listen 127.0.0.1:18080 --admin-listen 127.0.0.1:18081 \
  --raft-listen 127.0.0.1:17000 --admin-token "$token" --rate-limits=false --log-level warn 2>"$dir/server.log" &
pid=$!
for _ in $(seq 100); do
  curl -fsS http://127.0.0.1:18080/v1 >/dev/null 2>&1 && break
  sleep 0.1
done

echo "== POST /v1/videos, single node, fsync on, 64 clients"
$bin bench create --server http://127.0.0.1:18080 --admin-server http://127.0.0.1:18081 \
  --admin-token "$token" --accounts 64 --concurrency 64 --duration "${BENCH_DURATION:-20s}"

echo
echo "== placement: 10,000 nodes, 100,000 queued tasks"
go test -run '^$' -bench Placement -benchtime 3s ./scheduler/ | grep -E '^Benchmark'

echo
echo "== dispatch: scheduler vs Postgres FOR UPDATE SKIP LOCKED (needs PostgreSQL at 127.0.0.1:5432)"
go test -run '^$' -bench Dispatch -benchtime 3s ./bench/ | grep -E '^Benchmark|SKIP'

echo
echo "== simulator: one simulated week of a 1,000-GPU farm at 10,000 videos/h"
TIMEFORMAT='wall %R s, CPU %U s user + %S s sys'
time $bin bench sim --fleet bench/testdata/fleet-1000gpu.json --workload bench/testdata/workload-10k.json \
  --hours 168 --format json >/dev/null
go test -run '^$' -bench SimWeek1000GPUs -benchtime 1x ./bench/ | grep -E '^Benchmark'

echo
echo "== pipeline overhead: 30 s 720p auto video vs one plain encode"
go test -run '^$' -bench 'AutoVideo30s720p|PlainEncode30s720p' -benchtime 1x -count 3 ./pipeline/ | grep -E '^Benchmark'

echo
echo "== webhooks: due batch out of 10,000 pending deliveries; verifying a signature"
go test -run '^$' -bench 'DueDeliveries|Verify' -benchmem ./controlplane/fsm/ ./controlplane/webhook/signature/ | grep -E '^Benchmark'

echo
echo "== media jobs: one prompt avatar portrait, one 300-character speech sample"
go test -run '^$' -bench 'WritePromptAvatar|Speak' -benchtime 5x ./pipeline/ | grep -E '^Benchmark'
