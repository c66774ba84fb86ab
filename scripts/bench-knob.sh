#!/usr/bin/env bash
# One setting of the server against another under create load: a fresh
# one-node server per run, 64 clients creating in a closed loop for DURATION
# (vidfarm bench create), the two settings alternating A B for ROUNDS rounds.
# Prints each run's rate, p99, the server's CPU per create (user + system from
# /proc/PID/stat), what the server allocated per create (bytes and objects,
# from the Go runtime's counters on /metrics: what the collector then has to
# chase), the mean apply of a create on the FSM's goroutine (the serial stage
# that bounds a many-core machine), peak resident memory (VmHWM), the pages
# the checkpoints wrote to the state file and the file's size per create
# (its write amplification and growth), then the median ratio B:A.
#
# A setting is server flags, or environment assignments for the server:
#   scripts/bench-knob.sh 'GOGC=100' 'GOGC=200'
#   scripts/bench-knob.sh '--raft-snapshot-threshold 8192' '--raft-snapshot-threshold 131072'
# Two builds against each other: BIN_A and BIN_B name the binaries (both
# ./bin/vidfarm by default), with empty settings:
#   BIN_A=/tmp/old BIN_B=/tmp/new scripts/bench-knob.sh '' ''
# NODES=3 runs a fresh three-node cluster instead (scripts/lib.sh's
# start_cluster, the clients spread over its members) and compares binaries
# only (empty settings): CPU, allocations and pages are the three members'
# sums, peak memory the largest member's, the apply the leader's.
#   NODES=3 BIN_A=/tmp/old BIN_B=/tmp/new scripts/bench-knob.sh '' ''
# With NODES=3 a setting may also say where the clients go: '' (client i
# starts on member i mod 3, as bench-anchors.sh does, and moves to the leader
# once a forwarded answer names it), 'spread' (client i stays on member
# i mod 3 and the followers forward: --follow-leader=false) or 'leader' (every
# client on n1, which bootstraps and leads): what the followers' forwarding
# costs the cluster, against the same load served without it.
#   NODES=3 scripts/bench-knob.sh spread ''
# CREATE_FLAGS passes flags to vidfarm bench create, run by LOAD_BIN (default
# the binary under test), e.g. creates with 1,000-character prompts:
#   CREATE_FLAGS='--prompt-chars 1000' LOAD_BIN=bin/vidfarm BIN_A=/tmp/old scripts/bench-knob.sh '' ''
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
[ $# = 2 ] || { echo "usage: $0 SETTING_A SETTING_B (server flags, or NAME=value for its environment)" >&2; exit 2; }
nodes=${NODES:-1}
case $nodes in
  1) ;;
  3) for t in "$1" "$2"; do
       case $t in '' | spread | leader) ;; *) echo "$0: with NODES=3 a setting is '', spread or leader (where the clients go), not $t" >&2; exit 2 ;; esac
     done ;;
  *) echo "$0: NODES must be 1 or 3, not $nodes" >&2; exit 2 ;;
esac
bin=./bin/vidfarm
rounds=${ROUNDS:-3}
duration=${DURATION:-20s}
[ -x "$bin" ] || go build -o "$bin" ./cmd/vidfarm
bin_a=${BIN_A:-$bin}
bin_b=${BIN_B:-$bin}
hz=$(getconf CLK_TCK)
dir=$(mktemp -d)
pids=()
cleanup() { [ ${#pids[@]} -gt 0 ] && kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
echo "bench-knob: A = $bin_a $1, B = $bin_b $2; $nodes node(s), $rounds rounds of $duration, 64 clients, load $(cut -d' ' -f1-3 /proc/loadavg)"
ratios=()
for r in $(seq "$rounds"); do
  rate_a=
  for which in A B; do
    setting=$1 server=$bin_a; [ $which = B ] && setting=$2 server=$bin_b
    rm -rf "$dir/v"; mkdir -p "$dir/v"; token=knob-$RANDOM$RANDOM
    if [ "$nodes" = 1 ]; then
      start_node "$server" "$setting" "$dir/v/n" "$token"
      pids=("$pid") admins=(http://127.0.0.1:18681)
    else
      start_cluster "$server" "$dir/v" "$token"
      [ "$setting" = leader ] && servers=${servers%%,*}
    fi
    t0=$(ticks "${pids[@]}") b0=$(gometric "$token" go_memstats_alloc_bytes_total "${admins[@]}") m0=$(gometric "$token" go_memstats_mallocs_total "${admins[@]}")
    if [ "$nodes" = 1 ]; then
      j=$(create_load "$bin" "$token" "$duration")
    elif [ "$setting" = spread ]; then
      j=$(CREATE_FLAGS="${CREATE_FLAGS:-} --follow-leader=false" create_load "$bin" "$token" "$duration" "$servers" "$admin")
    else
      j=$(create_load "$bin" "$token" "$duration" "$servers" "$admin")
    fi
    t1=$(ticks "${pids[@]}") b1=$(gometric "$token" go_memstats_alloc_bytes_total "${admins[@]}") m1=$(gometric "$token" go_memstats_mallocs_total "${admins[@]}")
    hwm=$(for p in "${pids[@]}"; do awk '/VmHWM/{print $2}' "/proc/$p/status"; done | sort -n | tail -1)
    apply=$(applymean "$token" create_video "${admins[0]}")
    # Pages the checkpoints wrote (a binary without the series prints -) and
    # the state files' size, per create.
    pages=$(gometric "$token" vidfarm_state_file_pages_written_total "${admins[@]}")
    kill "${pids[@]}"; wait "${pids[@]}" 2>/dev/null || true; pids=()
    file=$(find "$dir/v" -name state.db -printf '%s\n' | awk '{s += $1} END {print s + 0}')
    line=$(python3 -c 'import json,sys; j=json.loads(sys.argv[1]); n=max(j["created"],1); print("%.0f %.1f %.0f %d %.1f %.0f %s %.0f" % (j["creates_per_second"], j["p99_ns"]/1e6, float(sys.argv[2])/float(sys.argv[3])*1e6/n, int(sys.argv[4])//1024, (float(sys.argv[6])-float(sys.argv[5]))/n/1024, (float(sys.argv[8])-float(sys.argv[7]))/n, "%.2f" % (float(sys.argv[9])/n) if sys.argv[9] else "-", float(sys.argv[10])/n))' \
      "$j" $((t1 - t0)) "$hz" "$hwm" "$b0" "$b1" "$m0" "$m1" "$pages" "$file")
    read -r rate p99 cpu rss akb aobj ppc fpc <<<"$line"
    printf 'round %d %s (%s): %6s creates/s  p99 %6s ms  server CPU %4s µs, %5s KB in %4s allocations each  apply %5s µs  peak RSS %5s MB  pages written %4s, file %5s B each  load %s\n' \
      "$r" "$which" "$setting" "$rate" "$p99" "$cpu" "$akb" "$aobj" "$apply" "$rss" "$ppc" "$fpc" "$(cut -d' ' -f1 /proc/loadavg)"
    if [ $which = A ]; then rate_a=$rate; else ratios+=("$(python3 -c "print('%.2f' % ($rate / $rate_a))")"); fi
  done
done
echo "median ratio B:A creates/s = $(median "${ratios[@]}")"
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
