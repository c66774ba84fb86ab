#!/usr/bin/env bash
# Creates beside the anchors (issue 13): one vidfarm node, one etcd member and
# the PostgreSQL at $PG (default 127.0.0.1:5432, database test), all fsync on,
# each driven by 64 clients in a closed loop: vidfarm bench create (POST
# /v1/videos), vidfarm bench etcd (1 KB puts through etcd's JSON gateway) and
# pgbench running the create as one transaction (charge the balance, insert the
# video, insert the ledger entry). Alternates A B C for ROUNDS rounds of
# DURATION; prints every run, then the median ratios and the load.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=./bin/vidfarm
rounds=${ROUNDS:-3}
duration=${DURATION:-20s}
dir=$(mktemp -d)
token=bench-$RANDOM$RANDOM
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; wait "${pids[@]}" 2>/dev/null || true; rm -rf "$dir"' EXIT

$bin server --data-dir "$dir/vidfarm" --listen 127.0.0.1:18380 --admin-listen 127.0.0.1:18381 \
  --raft-listen 127.0.0.1:17300 --admin-token "$token" --rate-limits=false --log-level warn 2>"$dir/vidfarm.log" &
pids+=($!)
etcd --name anchor --data-dir "$dir/etcd" --listen-client-urls http://127.0.0.1:18379 \
  --advertise-client-urls http://127.0.0.1:18379 --listen-peer-urls http://127.0.0.1:18378 \
  --initial-advertise-peer-urls http://127.0.0.1:18378 --initial-cluster anchor=http://127.0.0.1:18378 \
  --log-level error >"$dir/etcd.log" 2>&1 &
pids+=($!)
for _ in $(seq 200); do
  curl -fsS http://127.0.0.1:18380/v1 >/dev/null 2>&1 && curl -fsS http://127.0.0.1:18379/health >/dev/null 2>&1 && break
  sleep 0.1
done
echo "etcd $(etcd --version | head -1 | awk '{print $3}'), $(nproc) cores; $rounds rounds of $duration each, 64 clients"

pg=${PG:-127.0.0.1:5432}
pgargs=(-h "${pg%:*}" -p "${pg##*:}" -U "${PGUSER:-postgres}" -d "${PGDATABASE:-test}")
schema=bench_anchor_$RANDOM
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
trap 'kill "${pids[@]}" 2>/dev/null || true; wait "${pids[@]}" 2>/dev/null || true; psql -q "${pgargs[@]}" -c "SET client_min_messages = warning; DROP SCHEMA $schema CASCADE" || true; rm -rf "$dir"' EXIT
cat >"$dir/create.sql" <<SQL
\\set aid random(1, 64)
BEGIN;
UPDATE $schema.accounts SET credits = credits - 3 WHERE id = :aid AND credits >= 3;
INSERT INTO $schema.videos VALUES (md5(random()::text || clock_timestamp()::text), :aid,
  '{"mode":"auto","prompt":"A thirty second tour of a solar lantern for campers","duration_seconds":5}', 'queued', 3, now());
INSERT INTO $schema.ledger (account_id, kind, amount, video_id, created_at) VALUES (:aid, 'charge', -3, 'v', now());
COMMIT;
SQL
secs=${duration%s}

ratios=()
pgratios=()
for r in $(seq "$rounds"); do
  v=$($bin bench create --server http://127.0.0.1:18380 --admin-server http://127.0.0.1:18381 --admin-token "$token" \
    --accounts 64 --concurrency 64 --duration "$duration" --json 2>/dev/null)
  e=$($bin bench etcd --endpoint http://127.0.0.1:18379 --concurrency 64 --duration "$duration" --json 2>/dev/null)
  line=$(python3 - "$v" "$e" <<'PY'
import json, sys
v, e = json.loads(sys.argv[1]), json.loads(sys.argv[2])
print("%.3f vidfarm %.0f creates/s (p99 %.1f ms, failed %d) | etcd %.0f puts/s (p99 %.1f ms, failed %d)" % (
    v["creates_per_second"] / e["creates_per_second"], v["creates_per_second"], v["p99_ns"] / 1e6,
    sum(v["failures"].values()), e["creates_per_second"], e["p99_ns"] / 1e6, sum(e["failures"].values())))
PY
)
  tps=$(pgbench -n -c 64 -j 2 -T "$secs" -f "$dir/create.sql" "${pgargs[@]}" 2>/dev/null | awk '/^tps/ {print $3; exit}')
  creates=$(python3 -c 'import json,sys; print("%.0f" % json.loads(sys.argv[1])["creates_per_second"])' "$v")
  pgr=$(awk -v c="$creates" -v t="$tps" 'BEGIN {printf "%.3f", c / t}')
  echo "round $r: ratio ${line} | PostgreSQL ${tps%.*} tx/s, ratio $pgr  (load $(cut -d' ' -f1 /proc/loadavg))"
  ratios+=("${line%% *}")
  pgratios+=("$pgr")
done
printf '%s\n' "${ratios[@]}" | sort -g | awk '{a[NR]=$1} END {printf "median ratio creates/s : etcd puts/s = %.2f× over %d rounds\n", a[int((NR+1)/2)], NR}'
printf '%s\n' "${pgratios[@]}" | sort -g | awk '{a[NR]=$1} END {printf "median ratio creates/s : PostgreSQL create transactions/s = %.2f× over %d rounds\n", a[int((NR+1)/2)], NR}'
echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"
