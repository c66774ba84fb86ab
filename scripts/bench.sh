#!/usr/bin/env bash
# make bench: the long benchmarks. Starts a single-node control plane with fsync on
# in a temporary data directory and drives POST /v1/videos with 64 concurrent
# clients, then the same against a three-node cluster, times SIGKILL failovers,
# runs the Go benchmarks and times the farm simulator (and a SimPy model of
# the same week for its CPU ratio). Figures go in docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=./bin/vidfarm
dir=$(mktemp -d)
token=bench-$RANDOM$RANDOM
cluster_pids=()
trap 'kill $pid "${cluster_pids[@]}" 2>/dev/null || true; wait $pid "${cluster_pids[@]}" 2>/dev/null || true; rm -rf "$dir"' EXIT

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
echo "== POST /v1/videos, three nodes, fsync on, 64 clients through the leader"
# The same load against a three-node cluster on this machine: n1 bootstraps,
# n2 and n3 join it; every create is one Raft apply replicated to both
# followers and fsynced on a majority before it is acknowledged. The clients
# talk to the leader (n1), so the figure is the replicated write path without
# a follower's forwarding hop.
for i in 1 2 3; do
  join=()
  [ "$i" -gt 1 ] && join=(--join http://127.0.0.1:18191)
  $bin server --node-id "n$i" --data-dir "$dir/n$i" --listen "127.0.0.1:1818$i" --admin-listen "127.0.0.1:1819$i" \
    --agent-listen "127.0.0.1:1817$i" --raft-listen "127.0.0.1:1710$i" --admin-token "$token" --agent-token "$token" \
    --blob-secret 00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff --rate-limits=false \
    --log-level warn "${join[@]}" 2>"$dir/n$i.log" &
  cluster_pids+=($!)
  for _ in $(seq 100); do
    curl -fsS "http://127.0.0.1:1818$i/v1" >/dev/null 2>&1 && break
    sleep 0.1
  done
done
for _ in $(seq 100); do
  [ "$(curl -fsS -H "Authorization: Bearer $token" http://127.0.0.1:18191/admin/v1/cluster/members | grep -o '"suffrage"' | wc -l)" = 3 ] && break
  sleep 0.1
done
$bin bench create --server http://127.0.0.1:18181 --admin-server http://127.0.0.1:18191 \
  --admin-token "$token" --accounts 64 --concurrency 64 --duration "${BENCH_DURATION:-20s}"
kill "${cluster_pids[@]}" 2>/dev/null || true
wait "${cluster_pids[@]}" 2>/dev/null || true

echo
echo "== failover: SIGKILL of the leader of three real processes, to the first acknowledged write through a survivor"
VIDFARM_FAILOVER_RUNS=${FAILOVER_RUNS:-5} go test -count=1 -run '^TestChaosFailoverTimes$' -v ./cmd/vidfarm/ | grep -E 'failover over'

echo
echo "== election soak: three nodes beside a CPU hog for ${SOAK:-10m}, then SIGKILLs of the leader under it"
VIDFARM_SOAK=${SOAK:-10m} VIDFARM_SOAK_FAILOVERS=${SOAK_FAILOVERS:-7} go test -count=1 -timeout 40m -run '^TestChaosElectionSoak$' -v ./cmd/vidfarm/ |
  grep -E 'soak result|soak failover|FAIL|ok '

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
  --hours 168 --replications 1 --format json >/dev/null
go test -run '^$' -bench SimWeek1000GPUs -benchtime 1x ./bench/ | grep -E '^Benchmark'

echo
echo "== simulator vs SimPy: the same week in bench/simpy/farm_week.py, alternately, CPU ratio (scripts/bench-simpy.sh)"
./scripts/bench-simpy.sh

echo
echo "== pipeline overhead: 30 s 720p auto video vs one plain encode (ffmpeg defaults, and at the delivery settings)"
go test -run '^$' -bench 'AutoVideo30s720p|PlainEncode' -benchtime 1x -count 3 ./pipeline/ | grep -E '^Benchmark'

echo
echo "== webhooks: due batch out of 10,000 pending deliveries; verifying a signature"
go test -run '^$' -bench 'DueDeliveries|Verify' -benchmem ./controlplane/fsm/ ./controlplane/webhook/signature/ | grep -E '^Benchmark'

echo
echo "== checkpoints of a create-only load with the event log on: pages written per create, hashed against sortable event ids"
go test -run '^$' -bench '^BenchmarkCheckpointEvents$' -benchtime 10x ./controlplane/fsm/ | grep -E '^Benchmark'

echo
echo "== the queue and the garbage collector: objects, bytes and collector CPU per queued video (50,000 auto videos applied from their log entries)"
go test -run '^$' -bench '^BenchmarkQueueMark$' -benchtime 1x -count 3 ./controlplane/fsm/ | grep -E '^Benchmark'
echo "== what a live object costs the collector, by its fields that hold pointers (100,000 objects of about 720 bytes)"
go test -run '^$' -bench '^BenchmarkPointerFields$' -benchtime 1x -count 3 ./internal/gcstat/ | grep -E '^Benchmark'

echo
echo "== GET /v1/videos from the state file: a page of 100 of an account with ${LIST_VIDEOS:-1000000} finished videos"
VIDFARM_BENCH_VIDEOS=${LIST_VIDEOS:-1000000} go test -run '^$' -bench '^BenchmarkListVideos$' -benchtime 500x -v ./controlplane/fsm/ |
  grep -E '^Benchmark|filled'

echo
echo "== media jobs: one prompt avatar portrait, one 300-character speech sample"
go test -run '^$' -bench 'WritePromptAvatar|Speak' -benchtime 5x ./pipeline/ | grep -E '^Benchmark'

echo
echo "== app-database bridge: inbound purchases and outbound export (needs PostgreSQL at 127.0.0.1:5432)"
go test -run '^$' -bench 'InboundPurchases|OutboundExport' -benchtime 20000x ./controlplane/appdb/ | grep -E '^Benchmark|SKIP'

echo
echo "== app-database bridge: outbound lag under the create load above"
pg="${VIDFARM_TEST_PG:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}"
psql=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)/psql
schema=vidfarm_bench_$RANDOM
"$psql" "$pg" -qc "CREATE SCHEMA $schema"
kill $pid; wait $pid 2>/dev/null || true
rm -rf "$dir/app" && mkdir "$dir/app"
$bin server --data-dir "$dir/app" --listen 127.0.0.1:18080 --admin-listen 127.0.0.1:18081 \
  --raft-listen 127.0.0.1:17000 --admin-token "$token" --rate-limits=false --log-level warn \
  --app-db "$pg&search_path=$schema" 2>"$dir/server-app.log" &
pid=$!
for _ in $(seq 100); do
  curl -fsS http://127.0.0.1:18080/v1 >/dev/null 2>&1 && break
  sleep 0.1
done
metric() { curl -fsS -H "Authorization: Bearer $token" http://127.0.0.1:18081/metrics | awk -v m="$1" '$1 == m {print $2}'; }
( while kill -0 $pid 2>/dev/null; do metric 'vidfarm_appdb_lag_seconds{direction="outbound"}'; sleep 0.5; done ) >"$dir/lag" &
sampler=$!
$bin bench create --server http://127.0.0.1:18080 --admin-server http://127.0.0.1:18081 \
  --admin-token "$token" --accounts 64 --concurrency 64 --duration "${BENCH_DURATION:-20s}"
start=$(date +%s.%N)
until [ "$(metric vidfarm_appdb_outbound_pending)" = "0" ]; do sleep 0.2; done
drain=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN {print e - s}')
kill $sampler 2>/dev/null || true
sort -g "$dir/lag" | awk -v drain="$drain" '{a[NR]=$1} END {printf "outbound lag during the run: p50 %.2f s, max %.2f s (%d samples); drained %.1f s after the load stopped\n", a[int((NR+1)/2)], a[NR], NR, drain}'
echo "exported rows: $(metric vidfarm_appdb_rows_exported_total)"
"$psql" "$pg" -qc "SET client_min_messages = warning; DROP SCHEMA $schema CASCADE"

echo
echo "== one checkpoint of 200,000 finished videos (scripts/bench-checkpoint.sh)"
./scripts/bench-checkpoint.sh

echo "== the state at scale: ${STATE_VIDEOS:-10000000} finished videos (scripts/bench-state.sh)"
./scripts/bench-state.sh

echo
echo "== a snapshot under create load (scripts/bench-snapshot.sh)"
./scripts/bench-snapshot.sh

echo
echo "== creates beside etcd and PostgreSQL, one node (scripts/bench-anchors.sh)"
./scripts/bench-anchors.sh

echo
echo "== creates beside etcd and PostgreSQL, three nodes each (NODES=3 scripts/bench-anchors.sh)"
NODES=3 ./scripts/bench-anchors.sh

echo
echo "== the garbage collector's setting under create load (scripts/bench-knob.sh GOGC=100 GOGC=200)"
./scripts/bench-knob.sh 'GOGC=100' 'GOGC=200'
