#!/usr/bin/env bash
# Usage: ops/services.sh start|stop|status|env [redis|postgres ...] | running redis|postgres — project-local Redis and PostgreSQL in .local/
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=ops/lib.sh
source "$root/ops/lib.sh"
local_dir=$root/.local
redis_port=${CARBSCAN_REDIS_PORT:-56379}
pg_port=${CARBSCAN_PG_PORT:-55432}
pg_bin=/usr/lib/postgresql/15/bin
redis_dir=$local_dir/redis
redis_pidfile=$redis_dir/redis.pid
local_redis_url=redis://127.0.0.1:$redis_port/0
local_database_url=postgres://postgres@127.0.0.1:$pg_port/carbscan

log() { echo "services.sh: $*" >&2; }

# A URL in the environment that is not our own local one points at a service someone else runs.
redis_external() { [[ -n ${REDIS_URL:-} && $REDIS_URL != "$local_redis_url" ]]; }
pg_external() { [[ -n ${DATABASE_URL:-} && $DATABASE_URL != "$local_database_url" ]]; }

# Postgres lives in .local/pg (or /var/tmp/carbscan-pg-<hash of the repo path>, when postgres cannot reach .local:
# lib.sh's pg_private_dir).
pg_home() { pg_private_dir pg; }

redis_pid() { [[ -f $redis_pidfile ]] && cat "$redis_pidfile" || true; }
pg_pid() {
    local pidfile=$local_dir/pg/data/postmaster.pid
    [[ -f $pidfile ]] && head -n 1 "$pidfile" || true
}

# stop_pid NAME COMM PID SIGNAL: signals PID and waits until it is gone (SIGKILL after 30 s).
stop_pid() {
    local name=$1 comm=$2 pid=$3 signal=$4
    if ! alive "$pid" "$comm"; then
        log "$name: not running"
        return
    fi
    kill "-$signal" "$pid"
    for _ in $(seq 300); do
        alive "$pid" "$comm" || { log "$name: stopped (pid $pid)"; return; }
        sleep 0.1
    done
    log "$name: still running after 30 s; killing pid $pid"
    kill -KILL "$pid" 2>/dev/null || true
}

start_redis() {
    if redis_external; then
        log "redis: using REDIS_URL=$REDIS_URL"
        return
    fi
    if alive "$(redis_pid)" redis-server; then
        log "redis: already running (pid $(redis_pid), port $redis_port)"
        return
    fi
    # Its pid file is $redis_pidfile: redis_up keeps the pid and the log in the folder it runs in.
    if redis_up "$redis_port" "$redis_dir" && alive "$(redis_pid)" redis-server; then
        log "redis: started (pid $(redis_pid), port $redis_port)"
        return
    fi
    log "redis: no PONG on port $redis_port after 10 s; see $redis_dir/redis.log"
    tail -n 20 "$redis_dir/redis.log" >&2 || true
    exit 1
}

start_postgres() {
    if pg_external; then
        log "postgres: using DATABASE_URL=$DATABASE_URL"
        return
    fi
    local home
    home=$(pg_home)
    if alive "$(pg_pid)" postgres; then
        log "postgres: already running (pid $(pg_pid), port $pg_port)"
    else
        if [[ ! -f $home/data/PG_VERSION ]]; then
            as_pg "$pg_bin/initdb" -D "$home/data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 \
                >"$local_dir/pg-initdb.log" 2>&1 || { cat "$local_dir/pg-initdb.log" >&2; exit 1; }
        fi
        if ! as_pg "$pg_bin/pg_ctl" -D "$home/data" -l "$home/postgres.log" -w -s \
            -o "-c listen_addresses=127.0.0.1 -c max_connections=200 -p $pg_port -k $home" start; then
            log "postgres: failed to start; see $home/postgres.log"
            tail -n 20 "$home/postgres.log" >&2 || true
            exit 1
        fi
        log "postgres: started (pid $(pg_pid), port $pg_port, data $home/data)"
    fi
    local db
    for db in carbscan carbscan_test; do
        if [[ $(psql_local -tAc "select 1 from pg_database where datname = '$db'") != 1 ]]; then
            psql_local -qc "create database $db"
            log "postgres: created database $db"
        fi
    done
}

psql_local() { "$pg_bin/psql" -X -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$pg_port" -U postgres -d postgres "$@"; }

env_lines() {
    printf 'export REDIS_URL=%q\n' "${REDIS_URL:-$local_redis_url}"
    printf 'export DATABASE_URL=%q\n' "${DATABASE_URL:-$local_database_url}"
}

status() {
    local name=$1 external_url=$2 pid=$3 comm=$4 port=$5
    if [[ -n $external_url ]]; then
        echo "$name: external ($external_url)"
    elif alive "$pid" "$comm"; then
        echo "$name: running (pid $pid, port $port)"
    else
        echo "$name: stopped"
    fi
}

usage() {
    sed -n '2s/^# //p' "${BASH_SOURCE[0]}" >&2
    exit 2
}

action=${1:-}
shift || true
services=("$@")
((${#services[@]})) || services=(redis postgres)
for service in "${services[@]}"; do
    [[ $service == redis || $service == postgres ]] || usage
done

case $action in
    start)
        mkdir -p "$local_dir"
        for service in "${services[@]}"; do "start_$service"; done
        env_lines >"$local_dir/env.sh"
        ;;
    stop)
        for service in "${services[@]}"; do
            case $service in
                redis) stop_pid redis redis-server "$(redis_pid)" TERM ;;
                # SIGINT is Postgres's fast shutdown: SIGTERM would wait for every client to disconnect.
                postgres) stop_pid postgres postgres "$(pg_pid)" INT ;;
            esac
        done
        ;;
    status)
        status redis "$(redis_external && echo "$REDIS_URL" || true)" "$(redis_pid)" redis-server "$redis_port"
        status postgres "$(pg_external && echo "$DATABASE_URL" || true)" "$(pg_pid)" postgres "$pg_port"
        ;;
    env) env_lines ;;
    running)
        (($# == 1)) || usage
        case $1 in
            redis) alive "$(redis_pid)" redis-server ;;
            postgres) alive "$(pg_pid)" postgres ;;
        esac
        ;;
    *) usage ;;
esac
