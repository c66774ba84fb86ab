#!/usr/bin/env bash
# Creates beside the anchors (issue 13): vidfarm, etcd and the PostgreSQL at
# $PG (default 127.0.0.1:5432, database test), all fsync on, each driven by 64
# clients in a closed loop: vidfarm bench create (POST /v1/videos), vidfarm
# bench etcd (1 KB puts through etcd's JSON gateway), bench/etcdgrpc (the same
# puts through etcd's own gRPC client, built here from its own module) and
# pgbench running the create as one transaction (charge the balance, insert the
# video, insert the ledger entry). Alternates A B C D for ROUNDS rounds of
# DURATION; prints every run, then the median ratios and the load. Each round
# runs against the state the rounds before it left: every vidfarm create
# stays queued (no agent renders them), so a round's line also says how many
# queued videos the vidfarm server (the leader) then holds, and its CPU per
# create rises with them (docs/benchmarks.md, "what the queue a server holds
# costs each create"; scripts/queue-growth.sh isolates it).
#
# NODES=1 (default): one vidfarm node, one etcd member. NODES=3: a three-node
# vidfarm cluster (n1 bootstraps, n2 and n3 join) and a three-member etcd
# cluster (static --initial-cluster), all on loopback; the 64 clients are
# spread over the three members' endpoints on both sides (client i starts on
# member i mod 3). Each side's client does what its servers make cheapest:
# etcd's stays, since an etcd follower serves the put and forwards only the
# proposal; vidfarm's moves to the leader once a forwarded answer names it
# (X-Vidfarm-Leader), since a vidfarm follower forwards the whole request and
# the leader serves it in full. VIDFARM_CREATE_FLAGS=--follow-leader=false
# keeps vidfarm's clients where they start (the followers then forward two
# creates of every three). PostgreSQL is
# the one local server in both modes; PG=none leaves it out (a machine without
# PostgreSQL, such as a lent GPU machine). ETCDGRPC=FILE uses a gRPC client
# built elsewhere (a machine without the module proxy); BIN=FILE another
# vidfarm binary.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BIN:-./bin/vidfarm}
rounds=${ROUNDS:-3}
duration=${DURATION:-20s}
nodes=${NODES:-1}
[ "$nodes" = 1 ] || [ "$nodes" = 3 ] || { echo "bench-anchors: NODES must be 1 or 3, not $nodes" >&2; exit 2; }
dir=$(mktemp -d)
token=bench-$RANDOM$RANDOM
pids=()
vpids=() # the vidfarm servers
epids=() # the etcd members
pg=${PG:-127.0.0.1:5432}
pgargs=(-h "${pg%:*}" -p "${pg##*:}" -U "${PGUSER:-postgres}" -d "${PGDATABASE:-test}")
schema=bench_anchor_$RANDOM
cleanup() {
  kill "${pids[@]}" 2>/dev/null || true
  wait "${pids[@]}" 2>/dev/null || true
  [ -z "${schema_made:-}" ] || psql -q "${pgargs[@]}" -c "SET client_min_messages = warning; DROP SCHEMA $schema CASCADE" || true
  rm -rf "$dir"
}
trap cleanup EXIT

# The gRPC anchor is its own module (so the main one does not pull in gRPC).
if [ -n "${ETCDGRPC:-}" ]; then
  cp "$ETCDGRPC" "$dir/etcdgrpc"
else
  (cd bench/etcdgrpc && go build -o "$dir/etcdgrpc" .)
fi

. scripts/lib.sh

# run LABEL CMD...: a client's JSON, or the script stops saying which failed.
# run LABEL CMD...: runs a load client and prints its JSON report; writes the
# client's CPU in seconds (user + system, its setup included) to
# $dir/client.cpu. run is called in a command substitution, a subshell whose
# only child is the client, so bash's times gives the client's CPU.
run() {
  local label=$1 out
  shift
  out=$("$@" 2>"$dir/client.err") || { echo "bench-anchors: round $r: $label failed: $(tail -3 "$dir/client.err")" >&2; exit 1; }
  times >"$dir/client.times" # not in a pipeline: that would be a subshell with no children
  awk 'NR == 2 { for (i = 1; i <= 2; i++) { split($i, t, /[ms]/); c += t[1] * 60 + t[2] } print c }' "$dir/client.times" >"$dir/client.cpu"
  printf '%s' "$out"
}

if [ "$nodes" = 1 ]; then
  $bin server --data-dir "$dir/vidfarm" --listen 127.0.0.1:18380 --admin-listen 127.0.0.1:18381 \
    --raft-listen 127.0.0.1:17300 --admin-token "$token" --rate-limits=false --log-level warn 2>"$dir/vidfarm.log" &
  pids+=($!) vpids+=($!)
  start_etcd "$dir/etcd"
  epids+=("$epid")
  await http://127.0.0.1:18380/v1
  servers=http://127.0.0.1:18380
  admin=http://127.0.0.1:18381
  endpoints=http://127.0.0.1:18379
else
  # vidfarm: as scripts/bench.sh's three-node run (docs/cluster.md), fsync on.
  n=${#pids[@]}
  start_cluster "$bin" "$dir" "$token"
  vpids+=("${pids[@]:n}")
  # etcd: three members, static bootstrap.
  initial=e1=http://127.0.0.1:18361,e2=http://127.0.0.1:18362,e3=http://127.0.0.1:18363
  for i in 1 2 3; do
    etcd --name "e$i" --data-dir "$dir/e$i" --listen-client-urls "http://127.0.0.1:1837$i" \
      --advertise-client-urls "http://127.0.0.1:1837$i" --listen-peer-urls "http://127.0.0.1:1836$i" \
      --initial-advertise-peer-urls "http://127.0.0.1:1836$i" --initial-cluster "$initial" \
      --initial-cluster-state new --initial-cluster-token "anchors-$token" --quota-backend-bytes "$etcd_quota" --log-level error >"$dir/e$i.log" 2>&1 &
    pids+=($!) epids+=($!)
  done
  for i in 1 2 3; do await "http://127.0.0.1:1837$i/health"; done
  endpoints=http://127.0.0.1:18371,http://127.0.0.1:18372,http://127.0.0.1:18373
fi
echo "etcd $(etcd --version | head -1 | awk '{print $3}'), $(nproc) cores; $nodes node(s) each; $rounds rounds of $duration each, 64 clients; load $(cut -d' ' -f1-3 /proc/loadavg)"

if [ "$pg" != none ]; then
psql -q "${pgargs[@]}" <<SQL
SET client_min_messages = warning;
CREATE SCHEMA $schema;
CREATE TABLE $schema.accounts (id int PRIMARY KEY, credits bigint NOT NULL);
CREATE TABLE $schema.videos (id text PRIMARY KEY, account_id int NOT NULL REFERENCES $schema.accounts,
  spec jsonb NOT NULL, status text NOT NULL, charged bigint NOT NULL, created_at timestamptz NOT NULL);
CREATE INDEX ON $schema.videos (account_id, created_at);
CREATE TABLE $schema.ledger (id bigserial PRIMARY KEY, account_id int NOT NULL, kind text NOT NULL,
  amount bigint NOT NULL, video_id text NOT NULL, created_at timestamptz NOT NULL);
INSERT INTO $schema.accounts SELECT g, 1000000000000 FROM generate_series(1, 64) g;
SQL
schema_made=1
cat >"$dir/create.sql" <<SQL
\\set aid random(1, 64)
BEGIN;
UPDATE $schema.accounts SET credits = credits - 3 WHERE id = :aid AND credits >= 3;
INSERT INTO $schema.videos VALUES (md5(random()::text || clock_timestamp()::text), :aid,
  '{"mode":"auto","prompt":"A thirty second tour of a solar lantern for campers","duration_seconds":5}', 'queued', 3, now());
INSERT INTO $schema.ledger (account_id, kind, amount, video_id, created_at) VALUES (:aid, 'charge', -3, 'v', now());
COMMIT;
SQL
fi
secs=${duration%s}

# The servers' CPU per operation (ticks, scripts/lib.sh; the client's is not
# in it) is the figure that bounds a CPU-bound shared machine. The vidfarm and
# gRPC load clients' own CPU per operation is printed beside it: on the same
# cores, a costlier client would leave its server less.
hz=$(getconf CLK_TCK)

ratios=()
grpcratios=()
pgratios=()
read -ra vflags <<<"${VIDFARM_CREATE_FLAGS:-}"
for r in $(seq "$rounds"); do
  t0=$(ticks "${vpids[@]}")
  v=$(run vidfarm $bin bench create --server "$servers" --admin-server "$admin" --admin-token "$token" \
    --accounts 64 --concurrency 64 --duration "$duration" --json "${vflags[@]}")
  vc=$(cat "$dir/client.cpu")
  t1=$(ticks "${vpids[@]}") t2=$(ticks "${epids[@]}")
  queued=$(gometric "$token" 'vidfarm_videos{status="queued"}' "$admin")
  e=$(run "etcd JSON" $bin bench etcd --endpoint "$endpoints" --concurrency 64 --duration "$duration" --json)
  t3=$(ticks "${epids[@]}")
  g=$(run "etcd gRPC" "$dir/etcdgrpc" --endpoint "$endpoints" --concurrency 64 --duration "$duration" --json)
  gc=$(cat "$dir/client.cpu")
  t4=$(ticks "${epids[@]}")
  tps=0
  [ "$pg" = none ] || tps=$(pgbench -n -c 64 -j 2 -T "$secs" -f "$dir/create.sql" "${pgargs[@]}" 2>/dev/null | awk '/^tps/ {print $3; exit}')
  line=$(python3 - "$v" "$e" "$g" "$tps" "$((t1 - t0))" "$((t3 - t2))" "$((t4 - t3))" "$hz" "$vc" "$gc" <<'PY'
import json, sys
v, e, g = (json.loads(a) for a in sys.argv[1:4])
tps = float(sys.argv[4]) or float("nan")  # PG=none
hz = float(sys.argv[8])
cpu = lambda ticks, r: float(ticks) / hz * 1e6 / max(r["created"], 1)  # server µs per operation
client = lambda secs, r: float(secs) * 1e6 / max(r["created"], 1)  # the load client's µs per operation
rate = lambda r: r["creates_per_second"]
# Failures by kind, so that a run of errors is not read as a rate.
fails = "; ".join("%s: %s" % (n, ", ".join("%d × %s" % (c, k[:80]) for k, c in r["failures"].items()))
                  for n, r in (("vidfarm", v), ("etcd JSON", e), ("etcd gRPC", g)) if r["failures"])
# The first three fields, the ratios the medians are taken of, are rounded as printed.
print("%.2f %.2f %.2f vidfarm %.0f creates/s (p99 %.1f ms, failed %d, server CPU %.0f µs each, its client %.0f µs) | "
      "etcd JSON %.0f puts/s (p99 %.1f ms, failed %d, server CPU %.0f µs each) | "
      "etcd gRPC %.0f puts/s (p99 %.1f ms, failed %d, server CPU %.0f µs each, its client %.0f µs) | PostgreSQL %.0f tx/s | ratios %.2f× JSON, %.2f× gRPC, %.2f× PostgreSQL" % (
    rate(v) / rate(e), rate(v) / rate(g), rate(v) / tps,
    rate(v), v["p99_ns"] / 1e6, sum(v["failures"].values()), cpu(sys.argv[5], v), client(sys.argv[9], v),
    rate(e), e["p99_ns"] / 1e6, sum(e["failures"].values()), cpu(sys.argv[6], e),
    rate(g), g["p99_ns"] / 1e6, sum(g["failures"].values()), cpu(sys.argv[7], g), client(sys.argv[10], g),
    tps, rate(v) / rate(e), rate(v) / rate(g), rate(v) / tps) + (" | failures " + fails if fails else ""))
PY
)
  read -r er gr pr rest <<<"$line"
  echo "round $r: $rest  (load $(cut -d' ' -f1 /proc/loadavg); vidfarm holds ${queued:-?} queued videos)"
  ratios+=("$er")
  grpcratios+=("$gr")
  pgratios+=("$pr")
done
echo "$nodes node(s): median ratio creates/s : etcd puts/s through the JSON gateway = $(median "${ratios[@]}")"
echo "$nodes node(s): median ratio creates/s : etcd puts/s through the gRPC client = $(median "${grpcratios[@]}")"
[ "$pg" = none ] || echo "$nodes node(s): median ratio creates/s : PostgreSQL create transactions/s = $(median "${pgratios[@]}")"
echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"
