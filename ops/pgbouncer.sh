#!/usr/bin/env bash
# Usage: ops/pgbouncer.sh start|stop|status|env — a project-local PgBouncer in transaction pooling in front of ops/services.sh's Postgres
# PgBouncer (Debian 12's 1.18, which does not track prepared statements in transaction mode) listens on
# CARBSCAN_PGBOUNCER_PORT (default 56432) with `pool_mode = transaction`, `default_pool_size` CARBSCAN_PGBOUNCER_POOL
# (default 10), and every database name passed through to the Postgres on CARBSCAN_PG_PORT (default 55432). It runs as
# the postgres user (PgBouncer refuses root) from .local/pgbouncer/. `start` does nothing when it already runs; it
# writes the `env` line (CARBSCAN_PGBOUNCER_URL, with `?pooler=transaction`) to .local/pgbouncer/env.sh.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=ops/lib.sh
source "$root/ops/lib.sh"
port=${CARBSCAN_PGBOUNCER_PORT:-56432}
pool=${CARBSCAN_PGBOUNCER_POOL:-10}
pg_port=${CARBSCAN_PG_PORT:-55432}

log() { echo "pgbouncer.sh: $*" >&2; }

usage() {
    sed -n '2s/^# //p' "${BASH_SOURCE[0]}" >&2
    exit 2
}

dir=$(pg_private_dir pgbouncer)
pidfile=$dir/pgbouncer.pid
pid() { cat "$pidfile" 2>/dev/null || true; }  # gone while it stops: no pid

env_lines() {
    printf 'export CARBSCAN_PGBOUNCER_URL=%q\n' "postgres://postgres@127.0.0.1:$port/carbscan?pooler=transaction"
}

start() {
    if alive "$(pid)" pgbouncer; then
        log "already running (pid $(pid), port $port)"
        return
    fi
    # trust, as the local Postgres (initdb --auth=trust): PgBouncer still wants the user in its auth file.
    echo '"postgres" ""' >"$dir/userlist.txt"
    cat >"$dir/pgbouncer.ini" <<EOF
[databases]
* = host=127.0.0.1 port=$pg_port

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir =
auth_type = trust
auth_file = $dir/userlist.txt
admin_users = postgres
pool_mode = transaction
default_pool_size = $pool
max_client_conn = 2000
logfile = $dir/pgbouncer.log
pidfile = $pidfile
EOF
    chown -R postgres:postgres "$dir" 2>/dev/null || true
    if ! as_pg pgbouncer -d -q "$dir/pgbouncer.ini"; then
        log "failed to start; see $dir/pgbouncer.log"
        tail -n 20 "$dir/pgbouncer.log" >&2 || true
        exit 1
    fi
    for _ in $(seq 100); do
        pg_isready -q -h 127.0.0.1 -p "$port" -d carbscan && break
        sleep 0.1
    done
    alive "$(pid)" pgbouncer || { log "did not start; see $dir/pgbouncer.log"; exit 1; }
    log "started (pid $(pid), port $port, pool $pool, transaction pooling)"
}

action=${1:-}
case $action in
    start)
        start
        env_lines >"$dir/env.sh"
        ;;
    stop)
        if alive "$(pid)" pgbouncer; then
            kill -INT "$(pid)"
            for _ in $(seq 100); do alive "$(pid)" pgbouncer || break; sleep 0.1; done
            log "stopped"
        else
            log "not running"
        fi
        ;;
    status)
        if alive "$(pid)" pgbouncer; then echo "pgbouncer: running (pid $(pid), port $port)"; else echo "pgbouncer: stopped"; exit 1; fi
        ;;
    env) env_lines ;;
    *) usage ;;
esac
