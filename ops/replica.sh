#!/usr/bin/env bash
# Usage: ops/replica.sh start|stop|status|env — a streaming replica of the local PostgreSQL (ops/services.sh) in .local/pg-replica/
# `start` takes a base backup of the running local primary (port CARBSCAN_PG_PORT, default 55432) with
# `pg_basebackup -R` and starts it as a hot standby on CARBSCAN_PG_REPLICA_PORT (default 55433), replaying each commit
# CARBSCAN_REPLICA_DELAY after the primary made it (recovery_min_apply_delay, default 2s: the lag tests need one they
# can see). It waits until the replica answers and is in recovery, and writes the `env` line (CARBSCAN_REPLICA_URL)
# to .local/replica/env.sh. A replica already running is left as it is; one that is not is made afresh from a new base
# backup (so it always follows the primary that runs now).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=ops/lib.sh
source "$root/ops/lib.sh"
local_dir=$root/.local
pg_port=${CARBSCAN_PG_PORT:-55432}
replica_port=${CARBSCAN_PG_REPLICA_PORT:-55433}
delay=${CARBSCAN_REPLICA_DELAY:-2s}
pg_bin=/usr/lib/postgresql/15/bin
env_dir=$local_dir/replica

log() { echo "replica.sh: $*" >&2; }

usage() {
    sed -n '2s/^# //p' "${BASH_SOURCE[0]}" >&2
    exit 2
}

[[ $replica_port =~ ^[0-9]+$ ]] && ((replica_port >= 1024 && replica_port <= 65535)) || {
    log "CARBSCAN_PG_REPLICA_PORT=$replica_port is not a port number in 1024..65535"
    exit 2
}
# Postgres's own syntax for a time: a number and an optional unit (ms, s, min).
[[ $delay =~ ^[0-9]+(ms|s|min)?$ ]] || { log "CARBSCAN_REPLICA_DELAY=$delay is not a time such as 2s or 500ms"; exit 2; }

# The replica lives in .local/pg-replica (or /var/tmp, when postgres cannot reach .local: lib.sh's pg_private_dir).
replica_home() { pg_private_dir pg-replica; }

replica_pid() {
    local pidfile=$local_dir/pg-replica/data/postmaster.pid
    [[ -f $pidfile ]] && head -n 1 "$pidfile" || true
}

primary_pid() {
    local pidfile=$local_dir/pg/data/postmaster.pid
    [[ -f $pidfile ]] && head -n 1 "$pidfile" || true
}

# psql_at PORT SQL: one value from the server on PORT (empty when it does not answer).
psql_at() { "$pg_bin/psql" -X -h 127.0.0.1 -p "$1" -U postgres -d postgres -tAc "$2" 2>/dev/null || true; }

env_lines() { echo "export CARBSCAN_REPLICA_URL=postgres://postgres@127.0.0.1:$replica_port/carbscan"; }

start() {
    if alive "$(replica_pid)" postgres; then
        log "already running (pid $(replica_pid), port $replica_port)"
        return
    fi
    if ! alive "$(primary_pid)" postgres; then
        log "the local primary is not running: ops/services.sh start postgres first"
        exit 1
    fi
    local home
    home=$(replica_home)
    # A stopped replica's data may follow an older primary (one made again by initdb): always a new base backup.
    as_pg rm -rf "$home/data"
    if ! as_pg "$pg_bin/pg_basebackup" -h 127.0.0.1 -p "$pg_port" -U postgres -D "$home/data" -R -X stream \
        --checkpoint=fast >"$home/basebackup.log" 2>&1; then
        log "pg_basebackup from port $pg_port failed:"
        cat "$home/basebackup.log" >&2
        exit 1
    fi
    # A hot standby needs at least the primary's max_connections (services.sh sets it on the command line, which the
    # base backup does not copy).
    local connections
    connections=$(psql_at "$pg_port" "show max_connections")
    if ! as_pg "$pg_bin/pg_ctl" -D "$home/data" -l "$home/postgres.log" -w -s \
        -o "-c listen_addresses=127.0.0.1 -c port=$replica_port -k $home -c max_connections=${connections:-200} -c hot_standby=on -c hot_standby_feedback=on -c recovery_min_apply_delay=$delay" \
        start; then
        log "failed to start; see $home/postgres.log"
        tail -n 20 "$home/postgres.log" >&2 || true
        exit 1
    fi
    local deadline=$((SECONDS + 30))
    until [[ $(psql_at "$replica_port" "select pg_is_in_recovery()") == t ]]; do
        if ((SECONDS >= deadline)); then
            log "not answering as a replica in recovery after 30 s; see $home/postgres.log"
            tail -n 20 "$home/postgres.log" >&2 || true
            exit 1
        fi
        sleep 0.1
    done
    log "started (pid $(replica_pid), port $replica_port, replaying $delay behind port $pg_port, data $home/data)"
}

stop() {
    local pid
    pid=$(replica_pid)
    if ! alive "$pid" postgres; then
        log "not running"
        return
    fi
    # SIGINT is Postgres's fast shutdown.
    kill -INT "$pid"
    for _ in $(seq 300); do
        alive "$pid" postgres || { log "stopped (pid $pid)"; return; }
        sleep 0.1
    done
    log "still running after 30 s; killing pid $pid"
    kill -KILL "$pid" 2>/dev/null || true
}

case ${1:-} in
    start)
        start
        mkdir -p "$env_dir"
        env_lines >"$env_dir/env.sh"
        ;;
    stop) stop ;;
    status)
        if alive "$(replica_pid)" postgres; then
            echo "replica: running (pid $(replica_pid), port $replica_port, in recovery: $(psql_at "$replica_port" "select pg_is_in_recovery()"), replayed: $(psql_at "$replica_port" "select pg_last_wal_replay_lsn()"))"
        else
            echo "replica: stopped"
            exit 1
        fi
        ;;
    env) env_lines ;;
    *) usage ;;
esac
