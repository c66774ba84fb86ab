# Helpers the benchmark scripts share; a script sources it from the
# repository root, after cd-ing there: . scripts/lib.sh

# await waits until a URL answers 200, for up to 20 s, and stops the script
# if it never does.
await() {
  for _ in $(seq 200); do
    curl -fsS "$1" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "$(basename "$0"): $1 did not answer" >&2
  exit 1
}

# ticks prints the CPU ticks (user + system, fields 14 and 15 of
# /proc/PID/stat) the given processes have used, summed; a run's difference
# over its operations is the servers' CPU per operation (divide by
# getconf CLK_TCK).
ticks() { for p in "$@"; do awk '{print $14 + $15}' "/proc/$p/stat"; done | awk '{t += $1} END {print t}'; }

# median prints the median of its arguments (ratios) and how many there were.
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {printf "%.2f× over %d rounds", a[int((NR+1)/2)], NR}'; }

# The one-node server bench-knob.sh and bench-growth.sh start, on fixed
# loopback ports. start_node BIN SETTING DATADIR TOKEN [OFFSET] starts it
# (SETTING: server flags, or NAME=value assignments for its environment),
# waits until it answers and leaves its process id in $pid; its log is
# DATADIR.log. OFFSET (default 0) moves every port by that much, for a
# second server beside the first (queue-growth.sh): the public API is on
# 18680 + OFFSET, the admin API on 18681 + OFFSET.
start_node() {
  local envs=() flags=() o=${5:-0}
  case $2 in
    --*) read -ra flags <<<"$2" ;;
    *) read -ra envs <<<"$2" ;;
  esac
  env "${envs[@]}" "$1" server --data-dir "$3" --listen "127.0.0.1:$((18680 + o))" --admin-listen "127.0.0.1:$((18681 + o))" \
    --agent-listen "127.0.0.1:$((18682 + o))" --raft-listen "127.0.0.1:$((17600 + o))" --admin-token "$4" \
    --rate-limits=false --log-level warn "${flags[@]}" 2>"$3.log" &
  pid=$!
  await "http://127.0.0.1:$((18680 + o))/v1"
}

# create_load BIN TOKEN DURATION [SERVERS ADMIN]: 64 clients creating in a
# closed loop against start_node's server (or the public URLs SERVERS,
# comma-separated, with the admin URL ADMIN: start_cluster's); prints vidfarm bench create's JSON report. CREATE_FLAGS adds
# flags of vidfarm bench create (--prompt-chars 1000), which LOAD_BIN (default
# BIN) must know: an older build under test need not.
create_load() {
  local flags=()
  read -ra flags <<<"${CREATE_FLAGS:-}"
  "${LOAD_BIN:-$1}" bench create --server "${4:-http://127.0.0.1:18680}" --admin-server "${5:-http://127.0.0.1:18681}" --admin-token "$2" \
    --accounts 64 --concurrency 64 --duration "$3" --json "${flags[@]}" 2>/dev/null
}

# cum_secs PROFILE: each function of a CPU profile with its cumulative CPU
# in seconds, "SECONDS FUNCTION" a line (go tool pprof's -cum table), for the
# scripts that add up a server's stages (profile-create.sh, profile-etcd.sh).
cum_secs() {
  go tool pprof -top -cum -nodecount=3000 "$1" 2>/dev/null |
    awk '$NF ~ /\./ { v = $4; s = sub(/ms$/, "", v) ? v / 1000 : (sub(/s$/, "", v) ? v : 0); print s, $NF }'
}

# ops_in LOAD SECONDS: the operations a load run made in SECONDS at its mean
# rate (LOAD: the JSON report of vidfarm bench create or bench/etcdgrpc).
ops_in() {
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["creates_per_second"] * float(sys.argv[2]))' "$1" "$2"
}

# gometric TOKEN NAME [ADMIN...]: a counter of start_node's server (or the
# sum over the servers at the admin endpoints given), from /metrics; empty
# when no server has it.
gometric() {
  local token=$1 name=$2 url
  shift 2
  [ $# -gt 0 ] || set -- http://127.0.0.1:18681
  for url in "$@"; do
    curl -fsS -H "Authorization: Bearer $token" "$url/metrics"
  done | awk -v k="$name" '$1 == k {s += $2; n++} END {if (n) printf "%.0f", s}'
}

# applymean TOKEN TYPE [ADMIN]: the mean time, in µs, that start_node's
# server (or the one at ADMIN) spent applying its commands of TYPE (e.g.
# create_video), from the FSM's apply histogram: the serial stage every
# create waits for.
applymean() {
  curl -fsS -H "Authorization: Bearer $1" "${3:-http://127.0.0.1:18681}/metrics" | awk -v t="type=\"$2\"" '
    index($1, "vidfarm_fsm_apply_seconds_sum{") == 1 && index($1, t) { s = $2 }
    index($1, "vidfarm_fsm_apply_seconds_count{") == 1 && index($1, t) { n = $2 }
    END { if (n > 0) printf "%.1f", s / n * 1e6; else printf "-" }'
}

# etcd_quota is the backend quota every etcd anchor runs with, etcd's
# documented maximum: past the default 2 GB, which a 16-core machine writes
# in two rounds of 15 s, every put fails with "database space exceeded".
etcd_quota=$((8 * 1024 * 1024 * 1024))

# start_etcd DATADIR [FLAG...]: the one-member etcd anchor (bench-anchors.sh,
# profile-etcd.sh, syscalls.sh) on fixed loopback ports, fsync on, with
# etcd_quota. Its log is DATADIR.log. Appends its process to the array pids,
# waits until it answers and leaves its process id in $epid.
start_etcd() {
  local data=$1
  shift
  etcd --name anchor --data-dir "$data" --listen-client-urls http://127.0.0.1:18379 \
    --advertise-client-urls http://127.0.0.1:18379 --listen-peer-urls http://127.0.0.1:18378 \
    --initial-advertise-peer-urls http://127.0.0.1:18378 --initial-cluster anchor=http://127.0.0.1:18378 \
    --quota-backend-bytes "$etcd_quota" --log-level error "$@" >"$data.log" 2>&1 &
  epid=$!
  pids+=("$epid")
  await http://127.0.0.1:18379/health
}

# start_cluster BIN DIR TOKEN starts the three-node cluster bench-anchors.sh
# and profile-create.sh run (docs/cluster.md), fsync on, on fixed loopback
# ports: n1 bootstraps and leads, n2 and n3 join. It waits until all three
# are voters, appends the processes to the array pids, and leaves the public
# endpoints in $servers, the leader's admin endpoint in $admin and the three
# admin endpoints in the array admins. The logs are DIR/nI.log.
start_cluster() {
  local i join n
  for i in 1 2 3; do
    join=()
    [ "$i" -gt 1 ] && join=(--join http://127.0.0.1:18491)
    "$1" server --node-id "n$i" --data-dir "$2/n$i" --listen "127.0.0.1:1848$i" --admin-listen "127.0.0.1:1849$i" \
      --agent-listen "127.0.0.1:1847$i" --raft-listen "127.0.0.1:1740$i" --admin-token "$3" --agent-token "$3" \
      --blob-secret 00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff --rate-limits=false \
      --log-level warn "${join[@]}" 2>"$2/n$i.log" &
    pids+=($!)
    await "http://127.0.0.1:1848$i/v1"
  done
  for _ in $(seq 200); do
    n=$(curl -fsS -H "Authorization: Bearer $3" http://127.0.0.1:18491/admin/v1/cluster/members | grep -o '"suffrage":"Voter"' | wc -l)
    [ "$n" = 3 ] && break
    sleep 0.1
  done
  [ "$n" = 3 ] || { echo "$(basename "$0"): the vidfarm cluster did not reach three voters" >&2; exit 1; }
  servers=http://127.0.0.1:18481,http://127.0.0.1:18482,http://127.0.0.1:18483
  admin=http://127.0.0.1:18491
  admins=(http://127.0.0.1:18491 http://127.0.0.1:18492 http://127.0.0.1:18493)
}
