#!/usr/bin/env bash
# Installs what the tests need where it is missing: ffmpeg/ffprobe, espeak-ng, a
# font for burned-in captions and fontconfig's fc-list, openssl and python3,
# rsvg-convert, etcd, promtool, chromium, PostgreSQL (Debian packages; a server is started when none
# answers on 127.0.0.1:5432) and staticcheck (Go module proxy).
# Safe to run repeatedly.
set -euo pipefail

need=()
command -v ffmpeg >/dev/null 2>&1 || need+=(ffmpeg)
command -v ffprobe >/dev/null 2>&1 || need+=(ffmpeg)
command -v espeak-ng >/dev/null 2>&1 || need+=(espeak-ng)
# The webhook signature tests check against independent HMAC implementations.
command -v openssl >/dev/null 2>&1 || need+=(openssl)
command -v python3 >/dev/null 2>&1 || need+=(python3)
# Burned-in captions (libass) need at least one font; the composite asks
# fc-list which of a brand kit's fonts the machine has.
command -v fc-list >/dev/null 2>&1 || need+=(fontconfig)
{ command -v fc-list >/dev/null 2>&1 && [ -n "$(fc-list 2>/dev/null | head -1)" ]; } || need+=(fonts-dejavu-core)
# The simulator's charts are checked by rendering them to PNG as a planner would.
command -v rsvg-convert >/dev/null 2>&1 || need+=(librsvg2-bin)
# The anchor benchmark's etcd client (bench/etcd.go) is tested against a real etcd.
command -v etcd >/dev/null 2>&1 || need+=(etcd-server)
# The alerting rules and the dashboard's queries are checked with promtool
# (deploy/observability), which Debian ships in the prometheus package (with
# the Prometheus server, which the tests do not use).
command -v promtool >/dev/null 2>&1 || need+=(prometheus)
# The app-database bridge tests (controlplane/appdb) need a PostgreSQL server.
pg_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1; }
[ -n "$(pg_bin)" ] || need+=(postgresql)
# The operator console's browser tests (controlplane/console) drive a headless Chromium.
command -v chromium >/dev/null 2>&1 || need+=(chromium)
if [ ${#need[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "deps: installing ${need[*]} with apt-get"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# A PostgreSQL at 127.0.0.1:5432 with trust auth and a database "test"
# (VIDFARM_TEST_PG overrides the address): when none answers, start a cluster of
# our own in $VIDFARM_PG_DIR. initdb refuses root, so root runs it as postgres.
if [ -z "${VIDFARM_TEST_PG:-}" ]; then
  bin="$(pg_bin)"
  as=()
  [ "$(id -u)" -ne 0 ] || as=(runuser -u postgres --)
  if ! "$bin/pg_isready" -q -h 127.0.0.1 -p 5432; then
    dir="${VIDFARM_PG_DIR:-/var/tmp/vidfarm-test-pg}"
    if [ ! -f "$dir/PG_VERSION" ]; then
      echo "deps: creating a test PostgreSQL cluster in $dir"
      mkdir -p "$dir"
      [ "$(id -u)" -ne 0 ] || chown postgres:postgres "$dir"
      chmod 700 "$dir"
      "${as[@]}" "$bin/initdb" -D "$dir" -U postgres --auth=trust -E UTF8 >/dev/null
    fi
    echo "deps: starting PostgreSQL on 127.0.0.1:5432"
    "${as[@]}" "$bin/pg_ctl" -D "$dir" -l "$dir/server.log" -w start \
      -o "-p 5432 -k $dir -c listen_addresses=127.0.0.1" >/dev/null
  fi
  if [ -z "$("$bin/psql" -h 127.0.0.1 -U postgres -d postgres -Atc "SELECT 1 FROM pg_database WHERE datname = 'test'")" ]; then
    "$bin/psql" -h 127.0.0.1 -U postgres -d postgres -qc "CREATE DATABASE test"
  fi
fi

gobin="$(go env GOPATH)/bin"
if ! command -v staticcheck >/dev/null 2>&1 && [ ! -x "$gobin/staticcheck" ]; then
  echo "deps: installing staticcheck"
  go install honnef.co/go/tools/cmd/staticcheck@v0.8.2
fi

go mod download
