#!/usr/bin/env bash
# Where a one-node server spends its time under create load: starts the
# server scripts/lib.sh's start_node starts, drives it with 64 clients for
# DURATION (default 30s) and, from the 10th second, takes a CPU profile of
# PROFILE seconds (default 15) and then a 3-s execution trace from the admin
# listener's /debug/pprof. Writes cpu.pprof, trace.out, load.json and
# summary.txt to OUT (default a temporary directory, printed), then prints the
# summary: creates/s, how busy the FSM's apply goroutine (runFSM) and Raft's
# leader loop were (their CPU over the profile's seconds; the leader loop's
# fsync waits are not CPU, see the trace), the top functions, and from the
# trace where the time of the handlers and the serial goroutines went
# (bench/tracewait). BIN is the binary (default bin/vidfarm).
#   OUT=/tmp/prof scripts/profile-create.sh
#   go tool pprof -focus=runFSM /tmp/prof/cpu.pprof   # then read further
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
bin=${BIN:-bin/vidfarm}
duration=${DURATION:-30s}
profile=${PROFILE:-15}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
out=$(cd "$out" && pwd)
dir=$(mktemp -d)
token=prof-$RANDOM$RANDOM
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dir"' EXIT
start_node "$bin" '' "$dir/data" "$token"
create_load "$bin" "$token" "$duration" >"$out/load.json" &
load=$!
sleep 10 # the profile is of the steady state, not the first accounts and the warm-up
get() { curl -fsS -H "Authorization: Bearer $token" -o "$out/$1" "http://127.0.0.1:18681/debug/pprof/$2"; }
get cpu.pprof "profile?seconds=$profile"
get trace.out "trace?seconds=3"
wait $load
{
  echo "$(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print("%.0f creates/s, p99 %.1f ms, failed %d" % (r["creates_per_second"], r["p99_ns"]/1e6, sum(r["failures"].values())))' "$out/load.json"
  # A machine lent without Go (the GPU machine) keeps the files for reading
  # elsewhere; pprof reads the symbols from the profile itself.
  if command -v go >/dev/null; then
    go tool pprof -top -nodecount=1 "$out/cpu.pprof" 2>/dev/null | grep '^Duration' || true
    # Each serial goroutine's busy share: its samples over the profile's seconds.
    go tool pprof -top -cum -nodecount=2000 "$out/cpu.pprof" 2>/dev/null |
      awk -v secs="$profile" '$NF ~ /raft\.\(\*Raft\)\.(runFSM|leaderLoop)$/ {
        v = $4; ms = sub(/ms$/, "", v) ? v / 1000 : (sub(/s$/, "", v) ? v : 0)
        printf "%s: %.2f s of CPU, busy %.0f%% of the profile\n", $NF, ms, ms / secs * 100 }'
    go tool pprof -top -nodecount=40 "$out/cpu.pprof" 2>/dev/null | tail -n +6
    echo
    (cd bench/tracewait && go run . "$out/trace.out")
  fi
} | tee "$out/summary.txt"
echo "profile-create: files in $out"
