#!/usr/bin/env bash
# A snapshot under create load (issue 13): one node, fsync on, 64 clients
# creating for 16 s, an admin snapshot 8 s in. Prints how long the snapshot
# call took, the creates and their p99 and slowest, and the server's own
# checkpoint figures (copy: the time applies waited on the lock; persist: the
# write). BIN picks the binary, so two builds can be run in turn; EXTRA adds
# server flags (e.g. --raft-snapshot-threshold 2048). Run by make
# bench (scripts/bench.sh) or alone.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BIN:-./bin/vidfarm}
dir=$(mktemp -d)
token=bench-$RANDOM
pub=http://127.0.0.1:18380; adm=http://127.0.0.1:18381
secret=00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff
$bin server --node-id n1 --data-dir "$dir" --listen 127.0.0.1:18380 --admin-listen 127.0.0.1:18381 \
  --agent-listen 127.0.0.1:18382 --raft-listen 127.0.0.1:17300 --admin-token "$token" --agent-token "$token" \
  --blob-secret $secret --rate-limits=false ${EXTRA:-} --log-level info 2>>"$dir/server.log" &
pid=$!
trap 'kill $pid; wait $pid; rm -rf $dir' EXIT
for _ in $(seq 300); do curl -fsS "$pub/v1" >/dev/null 2>&1 && break; sleep 0.1; done
api() { curl -fsS -H "Authorization: Bearer $token" "$@"; }
(sleep 8; s=$(date +%s%N); api -X POST "$adm/admin/v1/snapshot" >/dev/null; echo "admin snapshot took $((($(date +%s%N)-s)/1000000)) ms") & snapper=$!
$bin bench create --server "$pub" --admin-server "$adm" --admin-token "$token" --accounts 64 --concurrency 64 --duration 16s --json 2>/dev/null |
  python3 -c "import json,sys; r=json.load(sys.stdin); print('%d creates, p99 %.0f ms, max %.0f ms' % (r['created'], r['p99_ns']/1e6, r['max_ns']/1e6))"
wait $snapper
curl -fsS "$adm/metrics" -H "Authorization: Bearer $token" | grep -E "vidfarm_fsm_snapshot_seconds_(sum|count)|vidfarm_fsm_snapshot_bytes"
