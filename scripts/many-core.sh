#!/usr/bin/env bash
# The create path on a machine with many cores, in one call of a few minutes
# (a lent GPU machine: no Go, no PostgreSQL, no module proxy): profiles of a
# one-node and a three-node server under create load (profile-create.sh),
# then the anchors on one node and on three (bench-anchors.sh, PG=none). The
# profiles are kept in $OUT for reading where Go is. Build here and carry
# .gpu/ over (xz keeps it under the carry limit):
#   mkdir -p .gpu && go build -ldflags '-s -w' -o .gpu/vidfarm ./cmd/vidfarm
#   (cd bench/etcdgrpc && go build -ldflags '-s -w' -o ../../.gpu/etcdgrpc .)
#   cp "$(command -v etcd)" .gpu/etcd && xz -T2 .gpu/vidfarm .gpu/etcdgrpc .gpu/etcd
#   then, there: scripts/many-core.sh   (OUT defaults to $OUT, or /tmp/many-core)
# ROUNDS and DURATION pass to bench-anchors.sh (default 2 rounds of 10s).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/many-core}
mkdir -p "$out"
for f in .gpu/*.xz; do [ -e "$f" ] && xz -df "$f"; done
chmod +x .gpu/vidfarm .gpu/etcdgrpc .gpu/etcd
export PATH=$PWD/.gpu:$PATH
mkdir -p bin && cp .gpu/vidfarm bin/vidfarm # the load generator the scripts run
exec > >(tee "$out/log.txt") 2>&1
echo "== $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u)"
for n in 1 3; do
  echo "== profile, $n node(s)"
  NODES=$n OUT=$out/profile-$n BIN=.gpu/vidfarm DURATION=25s PROFILE=12 scripts/profile-create.sh >"$out/profile-$n.txt" 2>&1
  head -4 "$out/profile-$n.txt"
done
for n in 1 3; do
  echo "== anchors, $n node(s)"
  NODES=$n PG=none ROUNDS=${ROUNDS:-2} DURATION=${DURATION:-10s} BIN=.gpu/vidfarm ETCDGRPC=.gpu/etcdgrpc scripts/bench-anchors.sh
done
echo "== done $(date -u); profiles in $out/profile-1 and $out/profile-3"
