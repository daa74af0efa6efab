#!/usr/bin/env bash
# Throwaway test services for CI and local runs: PostgreSQL on 127.0.0.1:55432 and MariaDB on
# 127.0.0.1:53306, each with databases app and app2 and user app/app; ClickHouse (chdb behind the test
# shim, test/support/clickhouse-shim.ts) on 127.0.0.1:58123 with database app and user app/app when chdb is
# installed in $CHDB_PREFIX (default .chdb: npm install --prefix .chdb chdb@3.4.0) and node_modules exists.
# Data, sockets and logs live in $RUN (default /tmp/console-ci-services). Runs as root without systemd.
# Also installs Chromium for browser tests, Prometheus for the metrics scrape test and nginx for the reverse
# proxy test (both start their own servers). Usage: tools/ci/services.sh start|stop|env
set -euo pipefail

RUN=${RUN:-/tmp/console-ci-services}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CHDB_PREFIX=${CHDB_PREFIX:-$ROOT/.chdb}
PG_PORT=55432
MY_PORT=53306
CH_PORT=58123
PACKAGES=(postgresql mariadb-server chromium prometheus nginx-light)

log() { echo "services: $*" >&2; }

# True while something accepts TCP connections on 127.0.0.1:$1 (bash's /dev/tcp; no ss/nc needed).
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Retries a command for up to 30 s.
wait_for() {
  for _ in $(seq 120); do "$@" >/dev/null 2>&1 && return 0; sleep 0.25; done
  return 1
}

install_missing() {
  local missing=() p
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null | grep -qx installed || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # Keep apt's postinst scripts from starting the distro daemons on their default ports.
  [ -e /usr/sbin/policy-rc.d ] || { printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; }
  if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$RUN/apt.log" 2>&1; then
    cat "$RUN/apt.log" >&2
    return 1
  fi
}

pg_bin() { ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n1; }

start_pg() {
  local bin d=$RUN/pg
  bin=$(pg_bin)
  mkdir -p "$d"
  # A random superuser password that is never printed: initdb needs one for scram on TCP.
  # Root works as postgres over the unix socket (trust); TCP clients need a real password.
  head -c 24 /dev/urandom | base64 >"$d/pwfile"
  chown -R postgres:postgres "$d"
  runuser -u postgres -- "$bin/initdb" -D "$d/data" -U postgres -E UTF8 --locale=C.UTF-8 \
    --auth-local=trust --auth-host=scram-sha-256 --pwfile="$d/pwfile" >"$d/initdb.log" 2>&1 \
    || { cat "$d/initdb.log" >&2; return 1; }
  rm -f "$d/pwfile"
  # Durability off: a throwaway server is faster that way and nothing here must survive a crash.
  runuser -u postgres -- "$bin/pg_ctl" -D "$d/data" -l "$d/log" -w -t 60 -o \
    "-c listen_addresses=127.0.0.1 -p $PG_PORT -k $d -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
    start >/dev/null || { cat "$d/log" >&2; return 1; }
  psql -h "$d" -p $PG_PORT -U postgres -d postgres -qX -v ON_ERROR_STOP=1 \
    -c "CREATE ROLE app LOGIN CREATEDB PASSWORD 'app'" \
    -c "CREATE DATABASE app OWNER app" -c "CREATE DATABASE app2 OWNER app"
}

start_my() {
  local d=$RUN/my
  mkdir -p "$d/data"
  chown -R mysql:mysql "$d"
  # --no-defaults keeps /etc/mysql out; mariadbd refuses to run as root without --user=mysql.
  mariadb-install-db --no-defaults --user=mysql --datadir="$d/data" \
    --auth-root-authentication-method=socket --skip-test-db >"$d/install.log" 2>&1 \
    || { cat "$d/install.log" >&2; return 1; }
  # utf8mb4 explicitly: without /etc/mysql's config the server default would be latin1.
  mariadbd --no-defaults --user=mysql --datadir="$d/data" --bind-address=127.0.0.1 --port=$MY_PORT \
    --socket="$d/sock" --pid-file="$d/pid" --log-error="$d/err.log" --skip-name-resolve \
    --character-set-server=utf8mb4 --collation-server=utf8mb4_unicode_ci \
    --innodb-flush-log-at-trx-commit=0 </dev/null >/dev/null 2>&1 &
  wait_for mariadb-admin --no-defaults --socket="$d/sock" -uroot ping \
    || { log "mariadb did not come up"; cat "$d/err.log" >&2; return 1; }
  # GRANT ALL ON *.* so that tests may create databases of their own.
  mariadb --no-defaults --socket="$d/sock" -uroot -e "
    CREATE DATABASE app; CREATE DATABASE app2;
    CREATE USER 'app'@'127.0.0.1' IDENTIFIED BY 'app'; GRANT ALL ON *.* TO 'app'@'127.0.0.1';
    CREATE USER 'app'@'localhost' IDENTIFIED BY 'app'; GRANT ALL ON *.* TO 'app'@'localhost';"
}

# True when the clickhouse lane can run here: chdb installed in its prefix, tsx installed for the shim.
ch_available() { [ -d "$CHDB_PREFIX/node_modules/chdb" ] && [ -d "$ROOT/node_modules/tsx" ]; }

start_ch() {
  local d=$RUN/ch
  if ! ch_available; then
    log "clickhouse lane off: chdb is not installed in $CHDB_PREFIX (npm install --prefix $CHDB_PREFIX chdb@3.4.0)"
    return 0
  fi
  mkdir -p "$d"
  # exec: the background job is node itself, so $! is the shim's pid.
  (cd "$ROOT" && CHDB_PREFIX=$CHDB_PREFIX exec node --import tsx test/support/clickhouse-shim.ts "$d/data" $CH_PORT app:app app) \
    </dev/null >"$d/log" 2>&1 &
  echo $! >"$d/pid"
  wait_for port_busy $CH_PORT || { log "clickhouse shim did not come up"; cat "$d/log" >&2; return 1; }
}

# Signals the pid in $1 only if it still is the process we started (a stale pid file may name another by now).
stop_pid() {
  local file=$1 pattern=$2 p
  [ -f "$file" ] || return 0
  p=$(cat "$file")
  if tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q -- "$pattern"; then
    kill "$p"
    wait_for test ! -e "/proc/$p" || log "$pattern $p did not stop"
  fi
  rm -f "$file"
}

stop() {
  local pgdata=$RUN/pg/data
  if [ -f "$pgdata/postmaster.pid" ]; then
    runuser -u postgres -- "$(pg_bin)/pg_ctl" -D "$pgdata" -m fast -w stop >/dev/null 2>&1 || true
  fi
  stop_pid "$RUN/my/pid" mariadbd
  stop_pid "$RUN/ch/pid" clickhouse-shim
}

start() {
  mkdir -p "$RUN"
  chmod 755 "$RUN"   # postgres and mysql must reach their subdirectories
  install_missing
  stop   # servers left over from an earlier run with the same $RUN
  local port
  for port in $PG_PORT $MY_PORT $CH_PORT; do
    if port_busy $port; then
      log "127.0.0.1:$port is still taken by a process not started from $RUN; stop it first"
      return 1
    fi
  done
  rm -rf "${RUN:?}/pg" "${RUN:?}/my" "${RUN:?}/ch"
  start_pg
  start_my
  start_ch
  log "postgres 127.0.0.1:$PG_PORT, mariadb 127.0.0.1:$MY_PORT (databases app, app2; user app)$([ -f "$RUN/ch/pid" ] && echo ", clickhouse http://127.0.0.1:$CH_PORT (database app; user app)")"
}

print_env() {
  echo "export TEST_PG_URL=postgres://app:app@127.0.0.1:$PG_PORT/app"
  echo "export TEST_MYSQL_URL=mysql://app:app@127.0.0.1:$MY_PORT/app"
  # Only while the shim runs: without it the clickhouse lane is left out rather than failing.
  if [ -f "$RUN/ch/pid" ] && [ -e "/proc/$(cat "$RUN/ch/pid")" ]; then
    echo "export TEST_CLICKHOUSE_URL=http://app:app@127.0.0.1:$CH_PORT/app"
  fi
}

case "${1:-}" in
  start | stop) "$1" ;;
  env) print_env ;;
  *) echo "usage: $0 start|stop|env" >&2; exit 2 ;;
esac
