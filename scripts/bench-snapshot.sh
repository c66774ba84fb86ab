#!/usr/bin/env bash
# A snapshot under create load (issue 13): one fresh node per run, fsync on,
# 64 clients creating for 16 s; runs alternate without and with an admin
# snapshot 8 s in (ROUNDS pairs, default 2), which is the issue's measure: the
# slowest create with a snapshot against the same load without one (Raft's
# own checkpoints run in both). Prints, per run, the creates, their p99 and
# slowest, how long the snapshot call took, and the server's checkpoint
# figures (count and mean copy: the time applies waited on the lock), then the
# load average. BIN picks the binary; EXTRA adds server flags (e.g.
# --raft-snapshot-threshold 2048). Run by make bench (scripts/bench.sh) or
# alone.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BIN:-./bin/vidfarm}
rounds=${ROUNDS:-2}
token=bench-$RANDOM
pub=http://127.0.0.1:18380; adm=http://127.0.0.1:18381
secret=00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff
pid=
dir=
trap 'if [ -n "$pid" ]; then kill $pid 2>/dev/null; wait $pid 2>/dev/null; fi; [ -z "$dir" ] || rm -rf "$dir"' EXIT
api() { curl -fsS -H "Authorization: Bearer $token" "$@"; }

run() { # $1: no or yes (an admin snapshot during the run)
  dir=$(mktemp -d)
  $bin server --node-id n1 --data-dir "$dir" --listen 127.0.0.1:18380 --admin-listen 127.0.0.1:18381 \
    --agent-listen 127.0.0.1:18382 --raft-listen 127.0.0.1:17300 --admin-token "$token" --agent-token "$token" \
    --blob-secret $secret --rate-limits=false ${EXTRA:-} --log-level warn 2>>"$dir/server.log" &
  pid=$!
  for _ in $(seq 300); do curl -fsS "$pub/v1" >/dev/null 2>&1 && break; sleep 0.1; done
  local snapper= took=-
  if [ "$1" = yes ]; then
    (sleep 8; s=$(date +%s%N); api -X POST "$adm/admin/v1/snapshot" >/dev/null; echo $((($(date +%s%N) - s) / 1000000)) >"$dir/took") &
    snapper=$!
  fi
  local load
  load=$($bin bench create --server "$pub" --admin-server "$adm" --admin-token "$token" --accounts 64 \
    --concurrency 64 --duration 16s --json 2>/dev/null |
    python3 -c "import json,sys; r=json.load(sys.stdin); print('%d creates, p99 %.0f ms, max %.0f ms' % (r['created'], r['p99_ns']/1e6, r['max_ns']/1e6))")
  if [ -n "$snapper" ]; then wait "$snapper"; took="$(cat "$dir/took") ms"; fi
  local ck
  ck=$(api "$adm/metrics" | python3 -c '
import sys
v = {}
for line in sys.stdin:
    for k in ("sum", "count"):
        if line.startswith("vidfarm_fsm_snapshot_seconds_%s{phase=\"copy\"}" % k):
            v[k] = float(line.split()[-1])
n = v.get("count", 0)
print("%d checkpoints, mean copy %.0f ms" % (n, 1000 * v.get("sum", 0) / n if n else 0))')
  echo "snapshot $1: $load; admin snapshot call $took; $ck"
  kill $pid; wait $pid 2>/dev/null || true
  pid=
  rm -rf "$dir"
  dir=
}

for round in $(seq "$rounds"); do
  for snap in no yes; do
    printf 'round %d, ' "$round"
    run $snap
  done
done
echo "load $(cut -d' ' -f1-3 /proc/loadavg)"
