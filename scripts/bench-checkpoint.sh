#!/usr/bin/env bash
# One checkpoint of many finished videos: a fresh one-node server (fsync on,
# --bench-fill) gets FILLS (default 2) bench fills of 100,000 finished
# videos with no checkpoint between, as after checkpoints that failed for a
# while (a full disk), then one POST /admin/v1/snapshot is timed. BIN is the
# binary (default bin/vidfarm); give two to alternate them:
#   scripts/bench-checkpoint.sh bin/vidfarm /tmp/vidfarm-before
set -euo pipefail
cd "$(dirname "$0")/.."
fills=${FILLS:-2}
secret=00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff
for bin in "${@:-bin/vidfarm}"; do
  dir=$(mktemp -d)
  token=bench-$RANDOM$RANDOM$RANDOM
  "$bin" server --node-id n1 --data-dir "$dir" --listen 127.0.0.1:18380 --admin-listen 127.0.0.1:18381 \
    --agent-listen 127.0.0.1:18382 --raft-listen 127.0.0.1:17300 --admin-token "$token" --agent-token "$token" \
    --blob-secret $secret --rate-limits=false --bench-fill --log-level warn 2>"$dir/server.log" &
  pid=$!
  trap 'kill $pid 2>/dev/null || true; rm -rf "$dir"' EXIT
  for _ in $(seq 300); do curl -fsS http://127.0.0.1:18380/v1 >/dev/null 2>&1 && break; sleep 0.1; done
  api() { curl -fsS -H "Authorization: Bearer $token" -H 'Content-Type: application/json' "$@"; }
  acct=$(api -X POST http://127.0.0.1:18381/admin/v1/accounts -d '{"name":"big","plan":"max","credits":1000000000}' |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["account_id"])')
  for _ in $(seq "$fills"); do
    api -X POST http://127.0.0.1:18381/admin/v1/bench/fill -d "{\"account_id\":\"$acct\",\"count\":100000}" >/dev/null
  done
  s=$(date +%s%N)
  api -X POST http://127.0.0.1:18381/admin/v1/snapshot >/dev/null
  peak=$(awk '/VmHWM/ {printf "%.0f MB", $2/1024}' "/proc/$pid/status")
  echo "$bin: checkpoint of $((fills * 100000)) finished videos $((($(date +%s%N) - s) / 1000000)) ms, peak RSS $peak, load $(cut -d' ' -f1 /proc/loadavg)"
  kill $pid
  wait $pid 2>/dev/null || true
  rm -rf "$dir"
  trap - EXIT
done
