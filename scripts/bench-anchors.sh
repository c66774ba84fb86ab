#!/usr/bin/env bash
# Creates beside the anchor (issue 13): one vidfarm node and one etcd member on
# this machine, both fsync on, each driven by the same closed loop of 64 clients
# (vidfarm bench create: POST /v1/videos; vidfarm bench etcd: 1 KB puts through
# etcd's JSON gateway), alternating A B A B for ROUNDS rounds of DURATION.
# Prints every run, then the median ratio of creates/s to puts/s and the load.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=./bin/vidfarm
rounds=${ROUNDS:-3}
duration=${DURATION:-20s}
dir=$(mktemp -d)
token=bench-$RANDOM$RANDOM
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; wait "${pids[@]}" 2>/dev/null || true; rm -rf "$dir"' EXIT

$bin server --data-dir "$dir/vidfarm" --listen 127.0.0.1:18380 --admin-listen 127.0.0.1:18381 \
  --raft-listen 127.0.0.1:17300 --admin-token "$token" --rate-limits=false --log-level warn 2>"$dir/vidfarm.log" &
pids+=($!)
etcd --name anchor --data-dir "$dir/etcd" --listen-client-urls http://127.0.0.1:18379 \
  --advertise-client-urls http://127.0.0.1:18379 --listen-peer-urls http://127.0.0.1:18378 \
  --initial-advertise-peer-urls http://127.0.0.1:18378 --initial-cluster anchor=http://127.0.0.1:18378 \
  --log-level error >"$dir/etcd.log" 2>&1 &
pids+=($!)
for _ in $(seq 200); do
  curl -fsS http://127.0.0.1:18380/v1 >/dev/null 2>&1 && curl -fsS http://127.0.0.1:18379/health >/dev/null 2>&1 && break
  sleep 0.1
done
echo "etcd $(etcd --version | head -1 | awk '{print $3}'), $(nproc) cores; $rounds rounds of $duration each, 64 clients"

ratios=()
for r in $(seq "$rounds"); do
  v=$($bin bench create --server http://127.0.0.1:18380 --admin-server http://127.0.0.1:18381 --admin-token "$token" \
    --accounts 64 --concurrency 64 --duration "$duration" --json 2>/dev/null)
  e=$($bin bench etcd --endpoint http://127.0.0.1:18379 --concurrency 64 --duration "$duration" --json 2>/dev/null)
  line=$(python3 - "$v" "$e" <<'PY'
import json, sys
v, e = json.loads(sys.argv[1]), json.loads(sys.argv[2])
print("%.3f vidfarm %.0f creates/s (p99 %.1f ms, failed %d) | etcd %.0f puts/s (p99 %.1f ms, failed %d)" % (
    v["creates_per_second"] / e["creates_per_second"], v["creates_per_second"], v["p99_ns"] / 1e6,
    sum(v["failures"].values()), e["creates_per_second"], e["p99_ns"] / 1e6, sum(e["failures"].values())))
PY
)
  echo "round $r: ratio ${line}  (load $(cut -d' ' -f1 /proc/loadavg))"
  ratios+=("${line%% *}")
done
printf '%s\n' "${ratios[@]}" | sort -g | awk '{a[NR]=$1} END {printf "median ratio creates/s : etcd puts/s = %.2f× over %d rounds\n", a[int((NR+1)/2)], NR}'
echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"
