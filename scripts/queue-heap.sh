#!/usr/bin/env bash
# What a queued video holds in a real server's heap: for each binary given
# (default bin/vidfarm), ROUNDS times (default 2) in turn, a fresh one-node
# server (scripts/lib.sh's start_node) takes DURATION (default 12s) of
# 64-client create load, which leaves every video queued; then three forced
# collections (/debug/pprof/heap?gc=1) and the live heap
# (go_memstats_heap_alloc_bytes) over the queued videos (vidfarm_videos).
# BenchmarkQueueMark measures the same in-process, without the server's
# own heap; RssAnon is printed too, though it keeps the load's garbage
# until the runtime returns it.
#   scripts/queue-heap.sh /tmp/old /tmp/new
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
rounds=${ROUNDS:-2}
duration=${DURATION:-12s}
[ $# -gt 0 ] || set -- bin/vidfarm
dir=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"' EXIT
# admin PATH: the admin listener's answer, with this run's $token.
admin() { curl -fsS -H "Authorization: Bearer $token" "http://127.0.0.1:18681$1"; }
echo "queue-heap: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $duration of create load, $rounds rounds"
for r in $(seq "$rounds"); do
  for bin in "$@"; do
    token=tok$r$RANDOM
    rm -rf "$dir/data"
    start_node "$bin" '' "$dir/data" "$token"
    pids=("$pid")
    create_load "$bin" "$token" "$duration" >/dev/null
    for _ in 1 2 3; do admin '/debug/pprof/heap?gc=1' >/dev/null; done
    metrics=$(admin /metrics)
    heap=$(awk '$1 == "go_memstats_heap_alloc_bytes" {print $2}' <<<"$metrics")
    queued=$(awk '/^vidfarm_videos\{/ && /queued/ {s += $2} END {print s + 0}' <<<"$metrics")
    anon=$(awk '/^RssAnon/ {print $2}' "/proc/$pid/status")
    python3 -c 'import sys; b, h, q, a = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]); print("%-24s %6d queued  live heap %4.0f MB, %5.0f B per queued video  RssAnon %4.0f MB" % (b, q, h / 1e6, h / q, a / 1e3))' \
      "$bin" "$heap" "$queued" "$anon"
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    pids=()
  done
done
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
