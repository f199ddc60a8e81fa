#!/usr/bin/env bash
# Runs a command with a PostgreSQL database of its own, then removes what it made:
#
#   scripts/with-postgres.sh COMMAND [ARGS...]
#
# The command sees ANCHORAGE_TEST_DATABASE_URL, a database made for this run. The server is,
# in this order:
#   - the one ANCHORAGE_TEST_POSTGRES names (an address whose role may create databases);
#   - the machine's own cluster, when one is online and this runs as root (a role of this
#     run's own is made in it, and dropped after);
#   - a throwaway cluster under target/ (its own data directory, socket and a free loopback
#     port), started here and stopped when the command ends.
# The database is dropped at the end, whatever the command's outcome; the command's exit
# status is this script's. Several runs may go at once. A throwaway cluster trades durability
# for speed (no fsync: nothing in it outlives the run); ANCHORAGE_POSTGRES_SETTINGS replaces
# those settings (benchmarks measure with PostgreSQL's defaults: ANCHORAGE_POSTGRES_SETTINGS=" ").
set -euo pipefail
cd "$(dirname "$0")/.."

[ "$#" -gt 0 ] || { echo "usage: scripts/with-postgres.sh COMMAND [ARGS...]" >&2; exit 2; }

say() { printf '\033[1mpostgres:\033[0m %s\n' "$*"; }

PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
PSQL=$(command -v psql || echo "$PGBIN/psql")

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# The same address with another database (its query, if any, kept).
with_database() {
  python3 -c 'import sys, urllib.parse as u; p = u.urlsplit(sys.argv[1]); print(u.urlunsplit(p._replace(path="/" + sys.argv[2])))' "$1" "$2"
}

# As root, the cluster's programs run as the postgres account (initdb refuses root).
as_postgres() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

RUN="$(date +%s)_$$"
DB="anchorage_test_$RUN"
SETTINGS=${ANCHORAGE_POSTGRES_SETTINGS:--c fsync=off -c synchronous_commit=off -c full_page_writes=off}
CLUSTER_DIR=""
ROLE=""
MACHINE_PORT=""
ADMIN_URL=""

finish() {
  status=$?
  trap - EXIT INT TERM
  if [ -n "$ADMIN_URL" ]; then
    "$PSQL" "$ADMIN_URL" -q -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 || true
  fi
  if [ -n "$ROLE" ]; then
    runuser -u postgres -- "$PSQL" -p "$MACHINE_PORT" -q -c "DROP ROLE IF EXISTS $ROLE" >/dev/null 2>&1 || true
  fi
  if [ -n "$CLUSTER_DIR" ]; then
    as_postgres "$PGBIN/pg_ctl" -D "$CLUSTER_DIR/data" -m fast -w stop >/dev/null 2>&1 || true
    rm -rf "$CLUSTER_DIR"
    say "stopped the throwaway cluster"
  fi
  exit "$status"
}
# Before anything is started: whatever was, is stopped, however this ends.
trap finish EXIT
trap 'exit 130' INT TERM

if [ -n "${ANCHORAGE_TEST_POSTGRES:-}" ]; then
  ADMIN_URL="$ANCHORAGE_TEST_POSTGRES"
  say "using $(printf '%s' "$ADMIN_URL" | sed 's#://\([^:@/]*\):[^@]*@#://\1:***@#')"
elif [ "$(id -u)" -eq 0 ] && command -v pg_lsclusters >/dev/null 2>&1 \
     && pg_lsclusters --no-header 2>/dev/null | awk '$4 == "online"' | grep -q .; then
  MACHINE_PORT=$(pg_lsclusters --no-header | awk '$4 == "online" { print $3; exit }')
  PASSWORD=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
  say "using the machine's cluster on port $MACHINE_PORT"
  runuser -u postgres -- "$PSQL" -p "$MACHINE_PORT" -q -v ON_ERROR_STOP=1 \
    -c "CREATE ROLE anchorage_$RUN LOGIN CREATEDB PASSWORD '$PASSWORD'" >/dev/null
  ROLE="anchorage_$RUN"
  ADMIN_URL="postgres://$ROLE:$PASSWORD@127.0.0.1:$MACHINE_PORT/postgres"
else
  if [ -z "$PGBIN" ] || [ ! -x "$PGBIN/postgres" ]; then
    echo "postgres: no PostgreSQL server found (scripts/setup.sh test installs Debian's postgresql)" >&2
    exit 1
  fi
  PORT=$(free_port)
  mkdir -p target
  CLUSTER_DIR=$(mktemp -d "$PWD/target/postgres.XXXXXX")
  if [ "$(id -u)" -eq 0 ]; then chown postgres: "$CLUSTER_DIR"; fi
  say "starting a throwaway cluster in ${CLUSTER_DIR#"$PWD/"} on port $PORT"
  as_postgres "$PGBIN/initdb" -D "$CLUSTER_DIR/data" -U anchorage -A trust -E UTF8 --no-sync >/dev/null
  # Loopback only, its socket in its own directory; nothing here must survive the run.
  as_postgres "$PGBIN/pg_ctl" -D "$CLUSTER_DIR/data" -l "$CLUSTER_DIR/log" -w -t 60 \
    -o "-p $PORT -k $CLUSTER_DIR -c listen_addresses=127.0.0.1 -c max_connections=400 $SETTINGS" \
    start >/dev/null
  ADMIN_URL="postgres://anchorage@127.0.0.1:$PORT/postgres"
fi

"$PSQL" "$ADMIN_URL" -q -v ON_ERROR_STOP=1 -c "CREATE DATABASE $DB" >/dev/null
export ANCHORAGE_TEST_DATABASE_URL
ANCHORAGE_TEST_DATABASE_URL=$(with_database "$ADMIN_URL" "$DB")
say "database $DB"
"$@"
