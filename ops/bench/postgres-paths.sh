#!/usr/bin/env bash
# Postgres paths benchmark (issue 32): the same work with the processes straight on PostgreSQL (named prepared
# statements, the default), straight on it with `pooler=transaction` (every statement unnamed: the cost of that path
# alone), through PgBouncer 1.18 in transaction pooling (ops/pgbouncer.sh), and through PgBouncer with the API's reads
# on a streaming replica (ops/replica.sh).
#   ops/bench/postgres-paths.sh [--runs 3] [--duration 10] [--chats 4000] [--modes "direct unnamed pgbouncer replica"]
# Per run and mode, alternating: an authenticated GET /meals (wrk -t2 -c32, a page of 20 of 50 meals) against one
# `carbscan serve`; then --chats chat jobs seeded in Postgres and Redis (slow-provider seed) and drained by one
# `carbscan work --queues ai` from a model answering at once (slow_model.py, delay 0), measured by
# slow_provider_measure.py: chats/s, the worker's CPU per chat, and Postgres' (postmaster and backends) and
# PgBouncer's CPU per chat over the same span. Medians; writes ops/bench/results/postgres-paths-<date>.md with the
# machine's description (BENCH_TAG=x: postgres-paths-<date>-x).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
runs=3 duration=10 chats=4000 modes="direct unnamed pgbouncer replica"
while (($#)); do
    case $1 in
        --runs) runs=$2; shift 2 ;;
        --duration) duration=$2; shift 2 ;;
        --chats) chats=$2; shift 2 ;;
        --modes) modes=$2; shift 2 ;;
        *) sed -n '2,12p' "$0" >&2; exit 64 ;;
    esac
done
# shellcheck source=ops/prelude.sh
source ops/prelude.sh
# The load generator, a benchmark's own need (ops/install.sh installs what the tests need).
apt_install_missing "$(basename "$0")" wrk
pids=()
cleanup() {
    ((${#pids[@]} == 0)) || kill "${pids[@]}" 2>/dev/null || true
    wait 2>/dev/null || true
    ((${#started[@]} == 0)) || ops/services.sh stop "${started[@]}"
    [[ -z ${pgbouncer_started:-} ]] || ops/pgbouncer.sh stop
    [[ -z ${replica_started:-} ]] || ops/replica.sh stop
    rm -rf "${work:-/nonexistent}"
}
trap cleanup EXIT
ops/services.sh start
ops/pgbouncer.sh status >/dev/null 2>&1 || pgbouncer_started=1
ops/pgbouncer.sh start
# shellcheck source=/dev/null
source .local/env.sh
# shellcheck source=/dev/null
source .local/pgbouncer/env.sh
if [[ $modes == *replica* ]]; then
    ops/replica.sh status >/dev/null 2>&1 || replica_started=1
    ops/replica.sh start
    # shellcheck source=/dev/null
    source .local/replica/env.sh
fi
release_build carbscan slow-provider
work=$(mktemp -d)
direct_url=$DATABASE_URL
pooled_url=$CARBSCAN_PGBOUNCER_URL
api_port=$(free_port) model_port=$(free_port)
redis_port=${REDIS_URL##*:}
redis_port=${redis_port%%/*}
postmaster=$(psql -Atq "$direct_url" -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'" | xargs -r ps -o ppid= -p | tr -d ' ')
pgbouncer_pid=$(cat .local/pgbouncer/pgbouncer.pid)

# The shipped job files with the AI bucket out of the way (as slow-provider.sh does).
mkdir "$work/jobs" && cp jobs/*.yml "$work/jobs/"
sed -i 's/^rate_limit: { name: ai, .*}/rate_limit: { name: ai, per_second: 1000000, burst: 1000000 }/' "$work/jobs/chat.yml"
export CARBSCAN_JOBS_DIR=$work/jobs LOG_LEVEL=warning JWT_SECRET=bench-secret-bench-secret-bench-secret
export LOGIN_WEBHOOK_URL=http://127.0.0.1:9 DATABASE_MIGRATION_URL=$direct_url
"$bin_dir/carbscan" migrate >&2
python3 ops/bench/slow_model.py "$model_port" 0 >"$work/model.log" 2>&1 &
model_pid=$!
pids+=("$model_pid")
export AI_BASE_URL=http://127.0.0.1:$model_port AI_API_KEY=sk-bench
until curl -sf "$AI_BASE_URL/stats" >/dev/null; do sleep 0.05; done

# in_mode MODE COMMAND…: runs COMMAND in the background with that mode's environment (DATABASE_URL, and the replica
# for the API's reads); its pid in `started_pid`.
in_mode() {
    local mode=$1
    shift
    local settings=()
    case $mode in
        direct) settings=("DATABASE_URL=$direct_url") ;;
        unnamed) settings=("DATABASE_URL=$direct_url?pooler=transaction") ;;
        pgbouncer) settings=("DATABASE_URL=$pooled_url") ;;
        replica) settings=("DATABASE_URL=$pooled_url" "DATABASE_READ_URL=$CARBSCAN_REPLICA_URL") ;;
    esac
    env "${settings[@]}" "$@" &
    started_pid=$!
}

# A user with 50 recent meals, for GET /meals.
export CARBSCAN_PREFIX=bench-pgpaths-$$
"$bin_dir/carbscan" serve --port "$api_port" >"$work/serve.log" 2>&1 &
serve=$!
base=http://127.0.0.1:$api_port/api/mobile/v1
until curl -sf -o /dev/null "$base/health"; do sleep 0.1; done
email="bench-pgpaths-$(date +%s%N)@example.com"
token=$(curl -sf "$base/auth/register" -H 'Content-Type: application/json' \
    -d "{\"email\":\"$email\",\"password\":\"bench password\"}" | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["accessToken"])')
meals=$(python3 -c 'import json; print(json.dumps({"localMeals": [{"localId": f"m{i}", "name": f"Meal {i}", "carbEstimate": 10 + i, "createdAt": "2026-11-20T12:00:00Z"} for i in range(50)]}))')
curl -sf -o /dev/null "$base/meals/sync" -H "Authorization: Bearer $token" -H 'Content-Type: application/json' -d "$meals"
psql "$direct_url" -qc "UPDATE meals SET created_at = now() - interval '1 hour' WHERE user_id = (SELECT id FROM users WHERE email = '$email')"
kill "$serve" && wait "$serve" 2>/dev/null || true
sleep 3  # the replica (2 s behind) has the meals before any read goes there

for run in $(seq "$runs"); do
    for mode in $modes; do
        echo "postgres-paths: run $run of $runs, $mode" >&2
        # GET /meals; the sign-up's read-your-writes mark has long expired or been replayed.
        in_mode "$mode" "$bin_dir/carbscan" serve --port "$api_port" >>"$work/serve.log" 2>&1
        serve=$started_pid
        until curl -sf -o /dev/null "$base/health"; do sleep 0.1; done
        wrk -t2 -c32 -d"${duration}s" --latency -H "Authorization: Bearer $token" "$base/meals" >"$work/wrk.txt"
        kill "$serve" && wait "$serve" 2>/dev/null || true
        python3 ops/bench/wrk_result.py "$mode" "$work/wrk.txt" >>"$work/meals"
        # Chats: seeded straight into Postgres and Redis, then drained by one worker in this mode.
        export CARBSCAN_PREFIX=bench-pgpaths-$run-$mode-$$
        DATABASE_URL=$direct_url "$bin_dir/slow-provider" seed --chats "$chats" --analyses 0 >&2
        curl -sf -X POST "$AI_BASE_URL/stats/reset"
        in_mode "$mode" "$bin_dir/carbscan" work --queues ai >>"$work/work.log" 2>&1
        worker=$started_pid
        result=$(python3 ops/bench/slow_provider_measure.py --jobs "$chats" --redis-port "$redis_port" \
            --done "HGET $CARBSCAN_PREFIX:{ai}:stats succeeded" --failed "HGET $CARBSCAN_PREFIX:{ai}:stats failed" \
            --server "$AI_BASE_URL" --pids "$worker" --server-pid "$model_pid" --postmaster "$postmaster" \
            --extra-pid "pgbouncer=$pgbouncer_pid")
        kill "$worker" && wait "$worker" 2>/dev/null || true
        echo "$mode $result" >>"$work/chats"
        redis-cli -p "$redis_port" --scan --pattern "$CARBSCAN_PREFIX:*" | xargs -r -n 1000 redis-cli -p "$redis_port" unlink >/dev/null
        psql -q "$direct_url" -c "DELETE FROM users WHERE id LIKE 'bench-%'" >&2
    done
done
psql -q "$direct_url" -c "DELETE FROM users WHERE email = '$email'" >&2

day="$(date -u +%F)${BENCH_TAG:+-$BENCH_TAG}"
mkdir -p ops/bench/results
python3 - "$work/meals" "$work/chats" "ops/bench/results/postgres-paths-$day.md" "$runs" "$duration" "$chats" <<'PY'
import json, platform, statistics, subprocess, sys, datetime
def sh(cmd):
    return subprocess.run(cmd, shell=True, capture_output=True, text=True).stdout.strip()
meals, chats = {}, {}
for line in open(sys.argv[1]):
    mode, rps, p99, bad = line.split()
    meals.setdefault(mode, []).append((float(rps), float(p99), int(bad)))
for line in open(sys.argv[2]):
    mode, text = line.split(" ", 1)
    chats.setdefault(mode, []).append(json.loads(text))
med = statistics.median
cpu = sh("lscpu | sed -n 's/^Model name: *//p'")
memory = sh("free -g | awk '/Mem:/{print $2}'")
machine = (f"{cpu}, {sh('nproc')} cores, {memory} GiB, {platform.system()} {platform.release()}, "
           f"{sh('swift --version 2>&1 | head -1')}, {sh('/usr/lib/postgresql/15/bin/postgres --version')}, {sh('pgbouncer --version | head -1')}")
names = {"direct": "straight to PostgreSQL, named prepared statements (default)",
         "unnamed": "straight to PostgreSQL, `pooler=transaction` (unnamed statements)",
         "pgbouncer": "through PgBouncer, transaction pooling (pool 10)",
         "replica": "through PgBouncer, the API's reads on a replica 2 s behind"}
lines = [f"# Postgres paths, {datetime.date.today().isoformat()}", "", f"Machine: {machine}.", "",
         f"`ops/bench/postgres-paths.sh`: medians of {sys.argv[4]} runs, the modes alternating within each run; release builds. "
         f"`GET /meals`: wrk -t2 -c32 for {sys.argv[5]} s against one `carbscan serve` (its pool of 8). Chats: {sys.argv[6]} chat jobs "
         "drained by one `carbscan work --queues ai` at its defaults from a model answering at once; CPU per chat over the "
         "drain (Postgres: postmaster and backends; PgBouncer's own process).", "",
         "| mode | GET /meals req/s | p99 ms | chats/s | worker µs/chat | Postgres µs/chat | PgBouncer µs/chat |",
         "| --- | --- | --- | --- | --- | --- | --- |"]
for mode in [m for m in names if m in meals]:
    rows = chats.get(mode, [])
    per = lambda key: med(r[key] * r["seconds"] * 1e6 / r["jobs"] for r in rows)
    lines.append(f"| {names[mode]} | {med(r for r, _, _ in meals[mode]):,.0f} | {med(p for _, p, _ in meals[mode]):.2f} | "
                 f"{med(r['jobs_per_s'] for r in rows):,.0f} | {med(r['worker_cpu_us_per_job'] for r in rows):.0f} | "
                 f"{per('postgres_cores'):.0f} | {per('pgbouncer_cores'):.0f} |")
lines += ["", "Per run:", ""]
for mode in meals:
    lines.append(f"- {mode}: GET /meals " + ", ".join(f"{r:,.0f}/s" for r, _, _ in meals[mode])
                 + (f" ({sum(b for _, _, b in meals[mode])} non-2xx)" if any(b for _, _, b in meals[mode]) else "")
                 + "; chats " + ", ".join(f"{r['jobs_per_s']}/s (failed {r['failed']})" for r in chats.get(mode, [])))
lines += ["", "Each drain as slow_provider_measure.py reported it:", ""]
lines += [f"- {mode}: `{json.dumps(r)}`" for mode, rows in chats.items() for r in rows]
open(sys.argv[3], "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
