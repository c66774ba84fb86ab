#!/usr/bin/env bash
# Where the anchor spends its time: profile-create.sh's counterpart for
# etcd. Starts one etcd member (Debian's etcd-server, fsync on, pprof on its
# client URL), drives it with bench/etcdgrpc (64 clients, 1 KB puts, as
# bench-anchors.sh does) for DURATION (default 30s) and, from the 10th
# second, takes a CPU profile of PROFILE seconds (default 15). Prints the
# puts a second, etcd's CPU per put (/proc/PID/stat) and the stages that
# matter for a comparison with a create, in µs per put: the gRPC path (the
# handler less the Raft request it waits on, HTTP/2 reading and writing),
# the apply, the backend's commits, Raft and its WAL, the collector and
# allocation. Writes etcd-cpu.pprof, load.json and summary.txt to OUT
# (default a temporary directory, printed). ETCDGRPC names a built client.
#   OUT=/tmp/etcdprof scripts/profile-etcd.sh
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${DURATION:-30s}
profile=${PROFILE:-15}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
out=$(cd "$out" && pwd)
dir=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"' EXIT
if [ -n "${ETCDGRPC:-}" ]; then
  cp "$ETCDGRPC" "$dir/etcdgrpc"
else
  (cd bench/etcdgrpc && go build -o "$dir/etcdgrpc" .)
fi
. scripts/lib.sh
start_etcd "$dir/etcd" --enable-pprof
pid=$epid
"$dir/etcdgrpc" --endpoint http://127.0.0.1:18379 --concurrency 64 --duration "$duration" --json >"$out/load.json" 2>/dev/null &
load=$!
sleep 10 # the steady state, as profile-create.sh
t0=$(ticks "$pid")
curl -fsS -o "$out/etcd-cpu.pprof" "http://127.0.0.1:18379/debug/pprof/profile?seconds=$profile"
t1=$(ticks "$pid")
wait $load
{
  echo "$(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); etcd $(etcd --version | head -1 | awk '{print $3}'), 1 member"
  python3 - "$out/load.json" "$((t1 - t0))" "$(getconf CLK_TCK)" "$profile" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
rate = r["creates_per_second"]
print("%.0f puts/s, p99 %.1f ms; etcd's CPU %.0f µs per put over the profile" % (
    rate, r["p99_ns"] / 1e6, float(sys.argv[2]) / float(sys.argv[3]) * 1e6 / (rate * float(sys.argv[4]))))
PY
  echo "µs per put (each stage's samples over the run's mean rate times the profile's seconds; a stage includes what it calls):"
  cum_secs "$out/etcd-cpu.pprof" |
    awk -v n="$(ops_in "$out/load.json" "$profile")" '{ s[$2] = $1 }
      END {
        rpc = s["google.golang.org/grpc.(*Server).processUnaryRPC"] - s["go.etcd.io/etcd/etcdserver.(*EtcdServer).processInternalRaftRequestOnce"]
        printf "  gRPC handler, less its Raft request  %6.1f\n", rpc * 1e6 / n
        printf "  HTTP/2 reading and writing          %6.1f\n", (s["google.golang.org/grpc/internal/transport.(*http2Server).HandleStreams"] + s["google.golang.org/grpc/internal/transport.(*loopyWriter).run"]) * 1e6 / n
        printf "  proposing (the Raft request)        %6.1f\n", s["go.etcd.io/etcd/etcdserver.(*EtcdServer).processInternalRaftRequestOnce"] * 1e6 / n
        printf "  apply                               %6.1f\n", s["go.etcd.io/etcd/etcdserver.(*EtcdServer).applyAll"] * 1e6 / n
        printf "  backend commits                     %6.1f\n", s["go.etcd.io/etcd/mvcc/backend.(*backend).run"] * 1e6 / n
        printf "  Raft and its WAL                    %6.1f\n", (s["go.etcd.io/etcd/etcdserver.(*raftNode).start.func1"] + s["go.etcd.io/etcd/raft.(*node).run"]) * 1e6 / n
        printf "  collector (background marking)     %6.1f\n", s["runtime.gcBgMarkWorker"] * 1e6 / n
        printf "  allocation (mallocgc)               %6.1f\n", s["runtime.mallocgc"] * 1e6 / n
      }'
} | tee "$out/summary.txt"
echo "profile-etcd: files in $out"
