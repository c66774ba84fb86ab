#!/usr/bin/env bash
# What a create asks of the kernel beside what an etcd put does: one fresh
# vidfarm node (scripts/lib.sh's start_node, 64 clients of vidfarm bench
# create) and one fresh etcd member (bench/etcdgrpc, 64 clients, 1 KB puts,
# as bench-anchors.sh drives them), alternated ROUNDS times (default 2).
# From the 6th second of each DURATION (default 18s) run, perf counts the
# server's system calls by kind, its context switches and its CPU for
# WINDOW seconds (default 8); each count is divided by the operations the
# run made in that window at its mean rate. Needs perf and the right to
# read syscall tracepoints (root, or kernel.perf_event_paranoid <= -1).
#   scripts/syscalls.sh
#   ROUNDS=3 scripts/syscalls.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
rounds=${ROUNDS:-2}
duration=${DURATION:-18s}
window=${WINDOW:-8}
bin=${BIN:-bin/vidfarm}
command -v perf >/dev/null || { echo "syscalls: perf is not installed (Debian: linux-perf)" >&2; exit 2; }
dir=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"' EXIT
(cd bench/etcdgrpc && go build -o "$dir/etcdgrpc" .)
kinds=(read write epoll_pwait futex nanosleep pwrite64 fsync fdatasync)
events=raw_syscalls:sys_enter,context-switches,task-clock
for k in "${kinds[@]}"; do events+=",syscalls:sys_enter_$k"; done

# count NAME PID LOADPID LOAD: perf's counts for PID over the window, per
# operation of the load LOADPID, whose JSON report is in LOAD once it ends.
count() {
  local name=$1 pid=$2 lpid=$3 load=$4
  sleep 6
  perf stat -x, -e "$events" -p "$pid" -- sleep "$window" 2>"$dir/perf" >/dev/null
  wait "$lpid"
  python3 - "$name" "$dir/perf" "$load" "$window" <<'PY'
import json, sys
name, perf, load, window = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
rate = json.load(open(load))["creates_per_second"]
ops = rate * window
c = {}
for line in open(perf):
    f = line.strip().split(",")
    if len(f) > 2 and f[0].replace(".", "", 1).isdigit():
        c[f[2].split(":")[-1].replace("sys_enter_", "")] = float(f[0])
kinds = ["read", "write", "epoll_pwait", "futex", "nanosleep", "pwrite64", "fsync", "fdatasync"]
print("%-8s %6.0f ops/s  CPU %4.0f µs  syscalls %4.2f  context switches %4.2f  | %s" % (
    name, rate, c["task-clock"] * 1e3 / ops, c["sys_enter"] / ops, c["context-switches"] / ops,
    "  ".join("%s %.2f" % (k, c.get(k, 0) / ops) for k in kinds)))
PY
}

echo "syscalls: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); per operation over ${window}-s windows, $rounds rounds"
for r in $(seq "$rounds"); do
  start_node "$bin" '' "$dir/v$r" "tok$r"
  pids=("$pid")
  create_load "$bin" "tok$r" "$duration" >"$dir/v$r.json" &
  count vidfarm "$pid" $! "$dir/v$r.json"
  kill "${pids[@]}"
  wait "${pids[@]}" 2>/dev/null || true

  pids=()
  start_etcd "$dir/e$r"
  "$dir/etcdgrpc" --endpoint http://127.0.0.1:18379 --concurrency 64 --duration "$duration" --json >"$dir/e$r.json" 2>/dev/null &
  count etcd "$epid" $! "$dir/e$r.json"
  kill "${pids[@]}"
  wait "${pids[@]}" 2>/dev/null || true
  pids=()
done
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
