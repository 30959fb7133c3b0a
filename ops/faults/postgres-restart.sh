#!/usr/bin/env bash
# Usage: ops/faults/postgres-restart.sh [--binary PATH] [--down SECONDS]
# A fault probe on loopback: a private PostgreSQL 15 and Redis behind a real `carbscan serve` and `carbscan work`,
# with device registrations (each a Postgres job) and signed-in reads arriving all the while. Postgres is stopped
# (`pg_ctl stop -m fast`, which ends every session with 57P01), kept down --down seconds (default 5), and started
# again. Reports the answers by status, the slowest answer, and the jobs: none may be dead, all must finish, and no
# process is restarted.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
# shellcheck source=ops/lib.sh
source ops/lib.sh
binary=.build/debug/carbscan
down=5
while (($#)); do
    case $1 in
        --binary) binary=$2; shift 2 ;;
        --down) down=$2; shift 2 ;;
        *) echo "unknown argument $1" >&2; exit 64 ;;
    esac
done
require_binary "$binary"
pg_bin=/usr/lib/postgresql/15/bin

dir=$(mktemp -d /var/tmp/carbscan-pgfault-XXXX)
chmod 755 "$dir"
pg_port=$(free_port) redis_port=$(free_port) api_port=$(free_port)
cleanup() {
    kill -9 "${serve:-0}" "${worker:-0}" "${load:-0}" 2>/dev/null || true
    as_pg "$pg_bin/pg_ctl" -D "$dir/pg" -m immediate -s stop 2>/dev/null || true
    redis_down "$redis_port"
    rm -rf "$dir"
}
trap cleanup EXIT

mkdir "$dir/pg" && [[ $(id -u) == 0 ]] && chown postgres "$dir/pg"
as_pg "$pg_bin/initdb" -D "$dir/pg" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null
pg_start() { as_pg "$pg_bin/pg_ctl" -D "$dir/pg" -l "$dir/pg/log" -w -s -o "-p $pg_port -k $dir/pg -c listen_addresses=127.0.0.1" start; }
pg_start
as_pg "$pg_bin/psql" -h 127.0.0.1 -p "$pg_port" -U postgres -qc "CREATE DATABASE carbscan" >/dev/null
redis_up "$redis_port" "$dir/redis"

export DATABASE_URL=postgres://postgres@127.0.0.1:$pg_port/carbscan REDIS_URL=redis://127.0.0.1:$redis_port/0
export JWT_SECRET=$(openssl rand -hex 32) CARBSCAN_PREFIX=pgfault SESSION_CACHE_SECONDS=0 LOGIN_MAX_ATTEMPTS_PER_IP=100000
"$binary" serve --port "$api_port" --migrate >"$dir/serve.log" 2>&1 &
serve=$!
"$binary" work --queues default --concurrency 20 >"$dir/worker.log" 2>&1 &
worker=$!
base=http://127.0.0.1:$api_port/api/mobile/v1
until curl -sf "$base/health" >/dev/null; do sleep 0.1; done
token=$(curl -s "$base/auth/register" -H 'Content-Type: application/json' \
    -d '{"email":"fault@example.com","password":"correct horse"}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["accessToken"])')

# The load: a device registration (a Postgres job) and a signed-in read, one after the other, for the whole run.
(
    i=0
    while true; do
        i=$((i + 1))
        hex=$(printf '%064x' "$i")
        curl -s -o /dev/null -m 10 -w '%{http_code} %{time_total}\n' "$base/devices/register" -H 'Content-Type: application/json' \
            -H 'Prefer: respond-async' -d "{\"deviceToken\":\"$hex\",\"platform\":\"ios\"}"
        curl -s -o /dev/null -m 10 -w '%{http_code} %{time_total}\n' "$base/auth/me" -H "Authorization: Bearer $token"
    done >"$dir/answers.txt"
) &
load=$!
sleep 3
as_pg "$pg_bin/pg_ctl" -D "$dir/pg" -m fast -s stop
echo "postgres stopped for ${down} s"
sleep "$down"
pg_start
echo "postgres started again"
sleep 5
kill "$load"
wait "$load" 2>/dev/null || true

echo "answers by status: $(cut -d' ' -f1 "$dir/answers.txt" | sort | uniq -c | tr '\n' ' ')"
echo "slowest answer: $(sort -k2 -n "$dir/answers.txt" | tail -1 | cut -d' ' -f2) s"
deadline=$(($(date +%s) + 60))
while :; do
    stats=$("$binary" jobs stats --json)
    left=$(python3 -c 'import json,sys; q=[s for s in json.loads(sys.argv[1]) if s["queue"]=="default"][0]; print(q["queued"]+q["running"]+q["retrying"]+q["scheduled"])' "$stats")
    [[ $left == 0 || $(date +%s) -ge $deadline ]] && break
    sleep 0.5
done
python3 - "$stats" <<'PY'
import json, sys
q = [s for s in json.loads(sys.argv[1]) if s["queue"] == "default"][0]
unfinished = q["queued"] + q["running"] + q["retrying"] + q["scheduled"]
print("jobs: %d succeeded, %d dead, %d retried, %d unfinished" % (q["succeededTotal"], q["dead"], q["retriedTotal"], unfinished))
PY
kill -0 "$serve" && kill -0 "$worker" && echo "serve and work still running: nothing was restarted"
