#!/usr/bin/env bash
# Slow-provider benchmark: carbscan's chat and analysis kinds against a local OpenAI-compatible model that answers
# every request after a fixed delay, against Sidekiq 6.4 running the same shape of job (one Net::HTTP POST to the
# same model). The model is ops/bench/slow_model.py. One carbscan worker process at a time; the AI rate limit raised
# out of the way in a copy of jobs/.
#   ops/bench/slow-provider.sh [--runs 3] [--delays "1000 5000"] [--kinds "chat analysis"] [--jobs 20000]
#                              [--carbscan "1000 10000"] [--sidekiq "2x1000"] [--photo-bytes 32768]
#                              [--bin-dir DIR] [--out FILE] [--no-events]
# --no-events: the copied job files without `events: true`, so a chat asks its model unstreamed and its job keeps no
# event log (the cost of following jobs, measured against the default).
# --carbscan: `carbscan work --concurrency` levels (1000 is the default); --sidekiq: PROCESSESxCONCURRENCY (2x1000 was
# Sidekiq's best on 2 cores, 2026-11-25). A run at
# concurrency C gets min(--jobs, 5·C) jobs (at least five full rounds of the model's delay, or --jobs).
# Per run: users, photos and reservations are seeded in Postgres and the jobs enqueued, then ONE worker starts on
# the full queue; slow_provider_measure.py polls every 10 ms (jobs/s from the model's first request to the last
# finished job; worker CPU over the same span; peak RSS; peak in flight at the model). The systems and levels
# alternate within each run. Uses REDIS_URL's server (a private prefix; Sidekiq in db 14, flushed) and DATABASE_URL
# (bench users are deleted after each run). Writes a results table (markdown) to --out or stdout.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
runs=3 delays="1000 5000" kinds="chat analysis" jobs=20000 carbscan_levels="1000 10000" sidekiq_levels="2x1000"
photo_bytes=32768 bin_dir="" out="" events=on
while (($#)); do
    case $1 in
        --runs) runs=$2; shift 2 ;;
        --delays) delays=$2; shift 2 ;;
        --kinds) kinds=$2; shift 2 ;;
        --jobs) jobs=$2; shift 2 ;;
        --carbscan) carbscan_levels=$2; shift 2 ;;
        --sidekiq) sidekiq_levels=$2; shift 2 ;;
        --photo-bytes) photo_bytes=$2; shift 2 ;;
        --bin-dir) bin_dir=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --no-events) events=off; shift ;;
        *) sed -n '2,15p' "$0" >&2; exit 64 ;;
    esac
done
# shellcheck source=ops/lib.sh
source ops/lib.sh
: "${REDIS_URL:?source .local/env.sh (ops/services.sh start) first}" "${DATABASE_URL:?}"
[[ -n $bin_dir ]] || release_build carbscan slow-provider
if [[ -n $sidekiq_levels ]] && ! command -v sidekiq >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ruby-sidekiq >&2
fi
# 10,000 sockets at the worker and as many at the model, plus Redis and Postgres.
ulimit -n "$(ulimit -Hn)"
(($(ulimit -n) >= 12000)) || echo "slow-provider.sh: warning: ulimit -n is $(ulimit -n); 10,000 in flight needs ~10,500 per process" >&2

read -r redis_port redis_db < <(python3 -c 'import sys, urllib.parse; u = urllib.parse.urlparse(sys.argv[1]); print(u.port or 6379, u.path.strip("/") or 0)' "$REDIS_URL")
work=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

# The shipped job files with the AI bucket raised out of the way (a provider limit is configuration: --jobs-dir).
mkdir -p "$work/jobs"
cp jobs/*.yml "$work/jobs/"
sed -i 's/^rate_limit: { name: ai, .*}/rate_limit: { name: ai, per_second: 1000000, burst: 1000000 }/' "$work/jobs/chat.yml" "$work/jobs/analysis.yml"
grep -q 'per_second: 1000000' "$work/jobs/chat.yml" && grep -q 'per_second: 1000000' "$work/jobs/analysis.yml"
if [[ $events == off ]]; then
    sed -i '/^events: true/d' "$work/jobs/chat.yml" "$work/jobs/analysis.yml"
    ! grep -q '^events:' "$work/jobs/chat.yml" "$work/jobs/analysis.yml"
fi
export CARBSCAN_JOBS_DIR=$work/jobs LOG_LEVEL=warning
"$bin_dir/carbscan" migrate >&2

model_port=$(free_port)
model_url=http://127.0.0.1:$model_port
export AI_BASE_URL=$model_url AI_API_KEY=sk-bench SLOW_PROVIDER_URL=$model_url SLOW_PROVIDER_PHOTO_BYTES=$photo_bytes
sidekiq_url=${REDIS_URL%/*}/14
# Their CPU is part of the figures when they run here (the local services of ops/services.sh).
redis_pid=$(redis-cli -p "$redis_port" info server | sed -n 's/^process_id:\([0-9]*\).*/\1/p')
postmaster=$(psql -Atq "$DATABASE_URL" -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'" | xargs -r ps -o ppid= -p | tr -d ' ')
export SIDEKIQ_BENCH_REDIS_URL=$sidekiq_url

start_model() {  # delay_ms
    python3 ops/bench/slow_model.py "$model_port" "$1" >>"$work/model.log" 2>&1 &
    model_pid=$!
    pids+=("$model_pid")
    until curl -sf "$model_url/stats" >/dev/null; do sleep 0.05; done
}

measure() {  # count redis-db done-command failed-command pids...
    local count=$1 db=$2 done=$3 failed=$4
    shift 4
    python3 ops/bench/slow_provider_measure.py --jobs "$count" --redis-port "$redis_port" --redis-db "$db" --done "$done" --failed "$failed" \
        --server "$model_url" --pids "$(IFS=,; echo "$*")" --server-pid "$model_pid" ${postmaster:+--postmaster "$postmaster"} \
        ${redis_pid:+--redis-pid "$redis_pid"}
}

run_carbscan() {  # kind concurrency delay run
    local kind=$1 level=$2 count=$(($2 * 5 < jobs ? $2 * 5 : jobs))
    export CARBSCAN_PREFIX=bench-slow-$kind-$level-$4-$$
    local chats=0 analyses=0
    if [[ $kind == chat ]]; then chats=$count; else analyses=$count; fi
    "$bin_dir/slow-provider" seed --chats "$chats" --analyses "$analyses" --photo-bytes "$photo_bytes" >&2
    curl -sf -X POST "$model_url/stats/reset"
    # SLOW_PROVIDER_PERF=DIR: each carbscan worker runs under `perf record -g` (DIR/<kind>-c<level>-<delay>-<run>.data).
    local worker perf=""
    if [[ -n ${SLOW_PROVIDER_PERF:-} ]]; then
        perf record -q -e cpu-clock -F 999 -g -o "$SLOW_PROVIDER_PERF/$kind-c$level-$3-$4.data" -- \
            "$bin_dir/carbscan" work --queues ai --concurrency "$level" >>"$work/carbscan.log" 2>&1 &
        perf=$!
        pids+=("$perf")
        until worker=$(pgrep -P "$perf"); do sleep 0.01; done
    else
        "$bin_dir/carbscan" work --queues ai --concurrency "$level" >>"$work/carbscan.log" 2>&1 &
        worker=$!
    fi
    pids+=("$worker")
    local result
    result=$(measure "$count" "$redis_db" "HGET $CARBSCAN_PREFIX:{ai}:stats succeeded" "HGET $CARBSCAN_PREFIX:{ai}:stats failed" "$worker")
    kill "$worker"
    wait "$worker" ${perf:+"$perf"} 2>/dev/null || true
    redis-cli -p "$redis_port" --scan --pattern "$CARBSCAN_PREFIX:*" | xargs -r -n 1000 redis-cli -p "$redis_port" unlink >/dev/null
    psql -q "$DATABASE_URL" -c "DELETE FROM users WHERE id LIKE 'bench-%'" >&2
    echo "carbscan c$level $kind $3 $4 $result"
}

run_sidekiq() {  # kind PxC delay run
    local kind=$1 procs=${2%x*} level=${2#*x}
    local count=$((procs * level * 5 < jobs ? procs * level * 5 : jobs))
    redis-cli -u "$sidekiq_url" flushdb >/dev/null
    (cd ops/bench/sidekiq && ruby slow_provider.rb enqueue "$kind" "$count") >&2
    curl -sf -X POST "$model_url/stats/reset"
    local workers=()
    for _ in $(seq "$procs"); do
        (cd ops/bench/sidekiq && exec sidekiq -r ./slow_provider.rb -c "$level" -q slow) >>"$work/sidekiq.log" 2>&1 &
        workers+=($!)
        pids+=($!)
    done
    local result
    result=$(measure "$count" 14 "GET bench:done" "" "${workers[@]}")
    kill "${workers[@]}"
    wait "${workers[@]}" 2>/dev/null || true
    redis-cli -u "$sidekiq_url" flushdb >/dev/null
    echo "sidekiq ${procs}x$level $kind $3 $4 $result"
}

for delay in $delays; do
    start_model "$delay"
    for run in $(seq "$runs"); do
        for kind in $kinds; do
            # In this shell, not a pipeline's subshell: the workers a run starts must reach `pids` for the cleanup.
            for level in $carbscan_levels; do run_carbscan "$kind" "$level" "$delay" "$run" >>"$work/results"; tail -n 1 "$work/results" >&2; done
            for level in $sidekiq_levels; do run_sidekiq "$kind" "$level" "$delay" "$run" >>"$work/results"; tail -n 1 "$work/results" >&2; done
        done
    done
    kill "$model_pid"
    wait "$model_pid" 2>/dev/null || true
done

python3 - "$work/results" "$photo_bytes" >"${out:-/dev/stdout}" <<'PY'
import json, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    system, level, kind, delay, run, result = line.split(" ", 5)
    rows.setdefault((int(delay), kind, system, level), []).append(json.loads(result))
print(f"Photo {sys.argv[2]} bytes. Medians of the runs (each run's jobs/s in brackets).\n")
print("| delay | kind | system | jobs | jobs/s | peak in flight | worker CPU µs/job | worker cores | Postgres cores | Redis cores | model cores | machine cores | peak RSS MB |")
print("|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for (delay, kind, system, level), results in sorted(rows.items(), key=lambda item: (item[0][0], item[0][1], item[0][2] != "carbscan", item[0][3])):
    med = lambda key: statistics.median(r[key] for r in results)
    rates = ", ".join(str(r["jobs_per_s"]) for r in results)
    name = f"carbscan --concurrency {level[1:]}" if system == "carbscan" else f"Sidekiq {level.replace('x', ' × -c ')}"
    print(f"| {delay / 1000:g} s | {kind} | {name} | {results[0]['jobs']} | {med('jobs_per_s'):.0f} ({rates}) | {med('peak_in_flight'):.0f} "
          f"| {med('worker_cpu_us_per_job'):.0f} | {med('worker_cpu_cores'):.2f} "
          f"| {med('postgres_cores'):.2f} | {med('redis_cores'):.2f} | {med('model_cores'):.2f} | {med('machine_cores'):.2f} | {med('peak_rss_mb'):.0f} |")
PY
