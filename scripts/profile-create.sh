#!/usr/bin/env bash
# Where a server spends its time under create load: starts one node
# (scripts/lib.sh's start_node; NODES=3: start_cluster's three, the clients
# spread over them), drives it with 64 clients for DURATION (default 30s)
# and, from the 10th second, takes a CPU profile of PROFILE seconds (default
# 15) of the node (of the leader and of one follower at once, with NODES=3),
# then a 3-s execution trace of the node (the leader) from the admin
# listener's /debug/pprof. Writes NAME-cpu.pprof (NAME: node, or leader and
# follower), NAME-trace.out, load.json and summary.txt to OUT (default a
# temporary directory, printed), then prints the summary: creates/s, how
# busy the FSM's apply goroutine (runFSM) and Raft's leader loop were (their
# CPU over the profile's seconds; the leader loop's fsync waits are not CPU,
# see the trace), the stages in µs per create (to set beside
# scripts/profile-etcd.sh's µs per put), the top functions, and from the trace where the time of
# the handlers and the serial goroutines went (bench/tracewait). BIN is the
# binary (default bin/vidfarm). A machine without Go (a lent GPU machine)
# keeps the files, to be read where Go is.
#   OUT=/tmp/prof scripts/profile-create.sh
#   NODES=3 OUT=/tmp/prof3 scripts/profile-create.sh
#   go tool pprof -focus=runFSM /tmp/prof/node-cpu.pprof   # then read further
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
bin=${BIN:-bin/vidfarm}
duration=${DURATION:-30s}
profile=${PROFILE:-15}
nodes=${NODES:-1}
[ "$nodes" = 1 ] || [ "$nodes" = 3 ] || { echo "profile-create: NODES must be 1 or 3, not $nodes" >&2; exit 2; }
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
out=$(cd "$out" && pwd)
dir=$(mktemp -d)
token=prof-$RANDOM$RANDOM
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"' EXIT
if [ "$nodes" = 1 ]; then
  start_node "$bin" '' "$dir/data" "$token"
  pids+=("$pid")
  names=(node) targets=(http://127.0.0.1:18681)
  create_load "$bin" "$token" "$duration" >"$out/load.json" &
else
  start_cluster "$bin" "$dir" "$token"
  names=(leader follower) targets=("${admins[0]}" "${admins[1]}")
  "$bin" bench create --server "$servers" --admin-server "$admin" --admin-token "$token" \
    --accounts 64 --concurrency 64 --duration "$duration" --json >"$out/load.json" 2>/dev/null &
fi
load=$!
sleep 10 # the profile is of the steady state, not the first accounts and the warm-up
get() { curl -fsS -H "Authorization: Bearer $token" -o "$out/$1" "$2/debug/pprof/$3"; }
profs=() # the profiles are taken at once, over the same seconds
for i in "${!names[@]}"; do
  get "${names[i]}-cpu.pprof" "${targets[i]}" "profile?seconds=$profile" &
  profs+=($!)
done
wait "${profs[@]}"
get "${names[0]}-trace.out" "${targets[0]}" "trace?seconds=3"
wait $load
{
  echo "$(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $nodes node(s)"
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print("%.0f creates/s, p99 %.1f ms, failed %d" % (r["creates_per_second"], r["p99_ns"]/1e6, sum(r["failures"].values())))' "$out/load.json"
  if command -v go >/dev/null; then
    for name in "${names[@]}"; do
      echo
      echo "== $name: $(go tool pprof -top -nodecount=1 "$out/$name-cpu.pprof" 2>/dev/null | grep '^Duration' || true)"
      cum_secs "$out/$name-cpu.pprof" >"$dir/$name.cum"
      # Each serial goroutine's busy share: its samples over the profile's seconds.
      awk -v secs="$profile" '$2 ~ /raft\.\(\*Raft\)\.(runFSM|leaderLoop|runFollower)$/ {
        printf "%s: %.2f s of CPU, busy %.0f%% of the profile\n", $2, $1, $1 / secs * 100 }' "$dir/$name.cum"
      # The stages, in µs per create, to set beside scripts/profile-etcd.sh's.
      awk -v n="$(ops_in "$out/load.json" "$profile")" '{ s[$2] = $1 }
        END {
          print "µs per create (each stage: its samples over the run mean rate times the profile seconds):"
          printf "  HTTP (net/http, the API, the proxy)   %6.1f\n", s["net/http.(*conn).serve"] * 1e6 / n
          printf "  the FSM goroutine (runFSM)           %6.1f\n", s["github.com/hashicorp/raft.(*Raft).runFSM"] * 1e6 / n
          printf "  checkpoints (runSnapshots)           %6.1f\n", s["github.com/hashicorp/raft.(*Raft).runSnapshots"] * 1e6 / n
          printf "  Raft (leader loop or follower)       %6.1f\n", (s["github.com/hashicorp/raft.(*Raft).leaderLoop"] + s["github.com/hashicorp/raft.(*Raft).runFollower"]) * 1e6 / n
          printf "  collector (background marking)       %6.1f\n", s["runtime.gcBgMarkWorker"] * 1e6 / n
          printf "  allocation (mallocgc)                %6.1f\n", s["runtime.mallocgc"] * 1e6 / n
        }' "$dir/$name.cum"
      go tool pprof -top -nodecount=30 "$out/$name-cpu.pprof" 2>/dev/null | tail -n +6
    done
    echo
    echo "== ${names[0]}'s trace"
    (cd bench/tracewait && go run . "$out/${names[0]}-trace.out")
  fi
} | tee "$out/summary.txt"
echo "profile-create: files in $out"
