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
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
[ $# = 2 ] || { echo "usage: $0 SETTING_A SETTING_B (server flags, or NAME=value for its environment)" >&2; exit 2; }
bin=./bin/vidfarm
rounds=${ROUNDS:-3}
duration=${DURATION:-20s}
[ -x "$bin" ] || go build -o "$bin" ./cmd/vidfarm
bin_a=${BIN_A:-$bin}
bin_b=${BIN_B:-$bin}
hz=$(getconf CLK_TCK)
dir=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
echo "bench-knob: A = $bin_a $1, B = $bin_b $2; $rounds rounds of $duration, 64 clients, load $(cut -d' ' -f1-3 /proc/loadavg)"
ratios=()
for r in $(seq "$rounds"); do
  rate_a=
  for which in A B; do
    setting=$1 server=$bin_a; [ $which = B ] && setting=$2 server=$bin_b
    rm -rf "$dir/v"; token=knob-$RANDOM$RANDOM
    start_node "$server" "$setting" "$dir/v" "$token"
    t0=$(ticks "$pid") b0=$(gometric "$token" go_memstats_alloc_bytes_total) m0=$(gometric "$token" go_memstats_mallocs_total)
    j=$(create_load "$bin" "$token" "$duration")
    t1=$(ticks "$pid") b1=$(gometric "$token" go_memstats_alloc_bytes_total) m1=$(gometric "$token" go_memstats_mallocs_total)
    hwm=$(awk '/VmHWM/{print $2}' "/proc/$pid/status") apply=$(applymean "$token" create_video)
    # Pages the checkpoints wrote (a binary without the series prints -) and
    # the state file's size, per create.
    pages=$(gometric "$token" vidfarm_state_file_pages_written_total)
    kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
    file=$(stat -c %s "$dir/v/state.db" 2>/dev/null || echo 0)
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
