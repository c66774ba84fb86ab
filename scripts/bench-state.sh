#!/usr/bin/env bash
# The state at scale (issue 13): one node, fsync on, STATE_VIDEOS finished videos
# (default ten million; one account holds LIST_ACCOUNT_VIDEOS of them, default a
# million) made by the bench-only fill command, stored as rendered videos are.
# Prints: the memory the server owns (RssAnon), the state file's size, restart
# to the first successful create, GET /v1/videos?limit=100 for the big account,
# a second node joining behind a compacted log (so it is sent the snapshot,
# streamed from the state file) until it has caught up, and the slowest create
# of 64 clients with and without a snapshot taken during the run. Run by make
# bench (scripts/bench.sh) or alone.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=./bin/vidfarm
videos=${STATE_VIDEOS:-10000000}
big=${LIST_ACCOUNT_VIDEOS:-1000000}
chunk=100000
dir=$(mktemp -d)
token=bench-$RANDOM$RANDOM
pub=http://127.0.0.1:18280
adm=http://127.0.0.1:18281
pid=
pid2=
trap 'kill $pid $pid2 2>/dev/null || true; wait $pid $pid2 2>/dev/null || true; rm -rf "$dir" "$dir.n2"' EXIT
secret=00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff

# A short log behind each snapshot, so a node that joins later is sent one.
start() {
  $bin server --node-id n1 --data-dir "$dir" --listen 127.0.0.1:18280 --admin-listen 127.0.0.1:18281 \
    --agent-listen 127.0.0.1:18282 --raft-listen 127.0.0.1:17200 --admin-token "$token" --agent-token "$token" \
    --blob-secret $secret --rate-limits=false --bench-fill --raft-trailing-logs 1 \
    --log-level warn 2>>"$dir/server.log" &
  pid=$!
}
api() { curl -fsS -H "Authorization: Bearer $token" -H 'Content-Type: application/json' "$@"; }
rss() { awk '/RssAnon/ {printf "%.0f MB", $2/1024}' "/proc/$pid/status"; }

start
for _ in $(seq 300); do curl -fsS "$pub/v1" >/dev/null 2>&1 && break; sleep 0.1; done
read -r acct key < <(api -X POST "$adm/admin/v1/accounts" -d '{"name":"big","plan":"max","credits":1000000000}' |
  python3 -c 'import json,sys; a=json.load(sys.stdin); print(a["account_id"], a["api_key"])')
read -r other _ < <(api -X POST "$adm/admin/v1/accounts" -d '{"name":"others","plan":"max","credits":1000000000}' |
  python3 -c 'import json,sys; a=json.load(sys.stdin); print(a["account_id"], a["api_key"])')

echo "== filling $videos finished videos ($big in one account), a checkpoint every $chunk"
t0=$(date +%s)
for ((done = 0; done < videos; done += chunk)); do
  n=$((videos - done < chunk ? videos - done : chunk))
  to=$other
  [ "$done" -lt "$big" ] && to=$acct
  api -X POST "$adm/admin/v1/bench/fill" -d "{\"account_id\":\"$to\",\"count\":$n}" >/dev/null
  api -X POST "$adm/admin/v1/snapshot" >/dev/null
  if (((done / chunk) % 10 == 9)); then
    echo "  $((done + n)) videos, $(($(date +%s) - t0)) s, server RssAnon $(rss)"
  fi
done
echo "filled in $(($(date +%s) - t0)) s; state file $(du -m "$dir/state.db" | cut -f1) MB; server RssAnon $(rss)"

echo
echo "== restart (SIGKILL) to the first successful create"
kill -9 $pid
wait $pid 2>/dev/null || true
s=$(date +%s%N)
start
until curl -fsS -o /dev/null -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
  -X POST "$pub/v1/videos" -d '{"mode":"auto","prompt":"after restart","duration_seconds":5}' 2>/dev/null; do
  sleep 0.02
done
echo "restart to first create: $((($(date +%s%N) - s) / 1000000)) ms; server RssAnon $(rss) (load $(cut -d' ' -f1 /proc/loadavg))"

echo
echo "== GET /v1/videos?limit=100 for the account with $big videos (ms: median, p99 of 200)"
for _ in $(seq 200); do
  curl -fsS -o /dev/null -w '%{time_total}\n' -H "Authorization: Bearer $key" "$pub/v1/videos?limit=100"
done | sort -n | awk '{a[NR]=$1*1000} END {printf "median %.1f ms, p99 %.1f ms\n", a[int(NR/2)], a[int(NR*0.99)]}'

echo
echo "== a second node joins; the leader's log is compacted, so it is sent the snapshot"
applied() { curl -fsS -H "Authorization: Bearer $token" "$1/metrics" | awk '$1 == "vidfarm_raft_index{index=\"applied_index\"}" {printf "%d", $2}'; }
api -X POST "$adm/admin/v1/snapshot" >/dev/null
s=$(date +%s%N)
$bin server --node-id n2 --data-dir "$dir.n2" --listen 127.0.0.1:18290 --admin-listen 127.0.0.1:18291 \
  --agent-listen 127.0.0.1:18292 --raft-listen 127.0.0.1:17210 --admin-token "$token" --agent-token "$token" \
  --blob-secret $secret --rate-limits=false --join "$adm" --start-timeout 60m --log-level info 2>"$dir/n2.log" &
pid2=$!
want=$(applied "$adm")
until [ "$(applied http://127.0.0.1:18291 2>/dev/null || echo 0)" -ge "$want" ] 2>/dev/null; do
  kill -0 $pid2 || { echo "n2 exited:"; tail -5 "$dir/n2.log"; exit 1; }
  sleep 0.5
done
echo "caught up in $((($(date +%s%N) - s) / 1000000)) ms: state file $(du -m "$dir.n2/state.db" | cut -f1) MB, n2 RssAnon $(awk '/RssAnon/ {printf "%.0f MB", $2/1024}' /proc/$pid2/status), leader RssAnon $(rss) (load $(cut -d' ' -f1 /proc/loadavg))"
curl -fsS -H "Authorization: Bearer $token" http://127.0.0.1:18291/metrics | grep '^vidfarm_state_videos'
# Back to one node for the create rounds.
api -X POST "$adm/admin/v1/cluster/remove" -d '{"id":"n2"}' >/dev/null
kill $pid2
wait $pid2 2>/dev/null || true
rm -rf "$dir.n2"

echo
echo "== slowest create, 64 clients, 20 s: without and with a snapshot during the run (alternating)"
for round in 1 2; do
  for snap in no yes; do
    snapper=
    if [ $snap = yes ]; then
      (sleep 8; api -X POST "$adm/admin/v1/snapshot" >/dev/null) &
      snapper=$!
    fi
    $bin bench create --server "$pub" --admin-server "$adm" --admin-token "$token" --accounts 64 \
      --concurrency 64 --duration 20s --json 2>/dev/null |
      python3 -c "import json,sys; r=json.load(sys.stdin); print('round $round, snapshot $snap: %d creates, p99 %.0f ms, max %.0f ms' % (r['created'], r['p99_ns']/1e6, r['max_ns']/1e6))"
    [ -z "$snapper" ] || wait "$snapper"
  done
done
echo "server RssAnon $(rss); load $(cut -d' ' -f1-3 /proc/loadavg)"
