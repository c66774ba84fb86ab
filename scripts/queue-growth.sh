#!/usr/bin/env bash
# What the queue a server holds costs each create: one server keeps its
# queue from round to round (scripts/lib.sh's start_node; every create of a
# create-only load stays queued), another is started fresh for every round
# on other loopback ports, and the two take DURATION (default 12s) of
# 64-client create load in turn, ROUNDS times (default 4). Prints each
# run's creates/s, p99 and the server's CPU per create (ticks), then the
# load and the keeping server's RssAnon. BIN_A is the fresh server's binary
# and BIN_B the keeping one's (both default BIN, default bin/vidfarm), so
# two builds can keep their queues side by side: BIN_A=... BIN_B=...
# KEEP_A=1 keeps A's queue too.
#   scripts/queue-growth.sh
#   KEEP_A=1 BIN_A=/tmp/old BIN_B=/tmp/new ROUNDS=5 scripts/queue-growth.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
bin=${BIN:-bin/vidfarm}
bin_a=${BIN_A:-$bin}
bin_b=${BIN_B:-$bin}
rounds=${ROUNDS:-4}
duration=${DURATION:-12s}
secs=${duration%s}
dir=$(mktemp -d)
token=queue-$RANDOM$RANDOM
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"' EXIT
hz=$(getconf CLK_TCK)

# start_a starts server A beside B, its ports 100 above B's.
start_a() {
  rm -rf "$dir/a"
  start_node "$bin_a" '' "$dir/a" "$token" 100
  apid=$pid
  pids+=("$apid")
}

# report LABEL LOAD TICKS: one run's line.
report() {
  python3 -c 'import json,sys
r = json.load(open(sys.argv[2]))
n = r["creates_per_second"] * float(sys.argv[4])
print("%s: %.0f creates/s, p99 %.1f ms, server CPU %.0f µs a create" % (sys.argv[1], r["creates_per_second"], r["p99_ns"] / 1e6, float(sys.argv[3]) / float(sys.argv[5]) / n * 1e6))' \
    "$1" "$2" "$3" "$secs" "$hz"
}

start_node "$bin_b" '' "$dir/b" "$token"
bpid=$pid
pids+=("$bpid")
[ -z "${KEEP_A:-}" ] || start_a
a_label=fresh
[ -z "${KEEP_A:-}" ] || a_label=keeping
echo "$(nproc) cores; A ($a_label) $bin_a, B (keeping) $bin_b; $rounds rounds of $duration; load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$rounds"); do
  [ -n "${KEEP_A:-}" ] || start_a
  t0=$(ticks "$apid")
  create_load "$bin_a" "$token" "$duration" http://127.0.0.1:18780 http://127.0.0.1:18781 >"$dir/a.json"
  report "round $r A ($a_label)" "$dir/a.json" $(($(ticks "$apid") - t0))
  if [ -z "${KEEP_A:-}" ]; then
    kill "$apid"
    wait "$apid" 2>/dev/null || true
  fi
  t0=$(ticks "$bpid")
  create_load "$bin_b" "$token" "$duration" >"$dir/b.json"
  report "round $r B (keeping)" "$dir/b.json" $(($(ticks "$bpid") - t0))
done
echo "load $(cut -d' ' -f1-3 /proc/loadavg); B $(grep RssAnon "/proc/$bpid/status" | tr -s '\t ' ' ')"
[ -z "${KEEP_A:-}" ] || echo "A $(grep RssAnon "/proc/$apid/status" | tr -s '\t ' ' ')"
