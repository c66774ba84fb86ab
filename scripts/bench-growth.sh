#!/usr/bin/env bash
# How a create's cost grows with the state: RUNS runs of DURATION (64
# clients, vidfarm bench create) one after the other against the SAME
# one-node server, so that every run starts with the videos of the runs
# before it still queued (no agent renders them). Prints each run's rate,
# p99, the server's CPU per create and its anonymous memory, then the state
# file's size. SETTING is as in scripts/bench-knob.sh: server flags, or
# NAME=value for its environment; BIN the binary (./bin/vidfarm).
#   scripts/bench-growth.sh
#   RUNS=5 DURATION=30s scripts/bench-growth.sh 'GOGC=200'
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
bin=${BIN:-./bin/vidfarm}
runs=${RUNS:-3}
duration=${DURATION:-15s}
setting=${1:-}
[ -x "$bin" ] || go build -o "$bin" ./cmd/vidfarm
hz=$(getconf CLK_TCK)
dir=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
token=growth-$RANDOM$RANDOM
start_node "$bin" "$setting" "$dir/v" "$token"
echo "bench-growth: $bin $setting; $runs runs of $duration against one server, 64 clients, load $(cut -d' ' -f1-3 /proc/loadavg)"
total=0
for r in $(seq "$runs"); do
  t0=$(ticks "$pid")
  j=$(create_load "$bin" "$token" "$duration")
  t1=$(ticks "$pid")
  anon=$(awk '/RssAnon/{print int($2/1024)}' "/proc/$pid/status")
  read -r rate p99 cpu n <<<"$(python3 -c 'import json,sys; j=json.loads(sys.argv[1]); n=max(j["created"],1); print("%.0f %.1f %.0f %d" % (j["creates_per_second"], j["p99_ns"]/1e6, float(sys.argv[2])/float(sys.argv[3])*1e6/n, j["created"]))' "$j" $((t1 - t0)) "$hz")"
  total=$((total + n))
  printf 'run %d: %6s creates/s  p99 %6s ms  server CPU %4s µs each  %7d videos queued after it  RssAnon %5s MB  load %s\n' \
    "$r" "$rate" "$p99" "$cpu" "$total" "$anon" "$(cut -d' ' -f1 /proc/loadavg)"
done
echo "state file and Raft log: $(du -sm "$dir/v" | cut -f1) MB"
