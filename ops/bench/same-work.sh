#!/usr/bin/env bash
# Same-work benchmark (issue 34, part 3): chats as users send them, each answered by a local OpenAI-compatible model
# after --delay ms, its answer stored once and its reservation charged in Postgres. carbscan's 2 `carbscan work`
# processes at their defaults (INFO logs to a file; the AI rate limit raised out of the way in a copy of jobs/, as
# a provider's limit is configuration) against Sidekiq 6.4 at its best here, 2 processes × -c 1000, whose job
# (ops/bench/sidekiq/same_work.rb) makes the same POST, then stores the answer and charges the reservation in one
# committed statement through a pool of ruby-pg connections.
#   ops/bench/same-work.sh [--runs 3] [--chats 5000] [--delay 1000] [--base-bin DIR] [--work-args "ARGS"] [--systems "carbscan sidekiq"]
#                          [--out FILE]
# --base-bin: also runs the `carbscan` of an earlier release build (e.g. a worktree's .build/release) as
# "carbscan-base", alternated with the others, for a before/after in one run. --work-args: given to every
# `carbscan work` (e.g. "--concurrency 2500"); the defaults otherwise.
# Per run and system: the bench users, their reserved chats (`slow-provider seed`, what POST /chat leaves: a chat
# counted on the user's day, a reservation, the job) are seeded, then the workers start on the full queue.
# slow_provider_measure.py reads jobs/s from the model's first request to the last finished job, the workers' and
# Postgres's CPU over that span, and the peak RSS of each worker. Uses REDIS_URL's server (a private prefix; Sidekiq in
# db 14, flushed) and DATABASE_URL (bench users deleted after each run).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
runs=3 chats=5000 delay=1000 base_bin="" work_args="" systems="carbscan sidekiq" out=""
while (($#)); do
    case $1 in
        --runs) runs=$2; shift 2 ;;
        --chats) chats=$2; shift 2 ;;
        --delay) delay=$2; shift 2 ;;
        --base-bin) base_bin=$2; shift 2 ;;
        --work-args) work_args=$2; shift 2 ;;
        --systems) systems=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        *) sed -n '2,18p' "$0" >&2; exit 64 ;;
    esac
done
# shellcheck source=ops/lib.sh
source ops/lib.sh
: "${REDIS_URL:?source .local/env.sh (ops/services.sh start) first}" "${DATABASE_URL:?}"
release_build carbscan slow-provider
command -v sidekiq >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ruby-sidekiq >&2
ruby -e 'require "pg"' 2>/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ruby-pg >&2
ulimit -n "$(ulimit -Hn)"

read -r redis_port redis_db < <(python3 -c 'import sys, urllib.parse; u = urllib.parse.urlparse(sys.argv[1]); print(u.port or 6379, u.path.strip("/") or 0)' "$REDIS_URL")
work=$(mktemp -d)
logs=${SAME_WORK_LOGS:-$work}  # SAME_WORK_LOGS=DIR keeps the workers' logs
mkdir -p "$logs"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$work/jobs"
cp jobs/*.yml "$work/jobs/"
sed -i 's/^rate_limit: { name: ai, .*}/rate_limit: { name: ai, per_second: 1000000, burst: 1000000 }/' "$work/jobs/chat.yml" "$work/jobs/analysis.yml"
grep -q 'per_second: 1000000' "$work/jobs/chat.yml" "$work/jobs/analysis.yml"
export CARBSCAN_JOBS_DIR=$work/jobs
"$bin_dir/carbscan" migrate >&2

model_port=$(free_port)
model_url=http://127.0.0.1:$model_port
export AI_BASE_URL=$model_url AI_API_KEY=sk-bench SLOW_PROVIDER_URL=$model_url
export SIDEKIQ_BENCH_REDIS_URL=${REDIS_URL%/*}/14
redis_pid=$(redis-cli -p "$redis_port" info server | sed -n 's/^process_id:\([0-9]*\).*/\1/p')
postmaster=$(psql -Atq "$DATABASE_URL" -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'" | xargs -r ps -o ppid= -p | tr -d ' ')
python3 ops/bench/slow_model.py "$model_port" "$delay" >>"$work/model.log" 2>&1 &
model_pid=$!
pids+=("$model_pid")
until curl -sf "$model_url/stats" >/dev/null; do sleep 0.05; done

measure() {  # redis-db done-command failed-command pids...
    local db=$1 done=$2 failed=$3
    shift 3
    python3 ops/bench/slow_provider_measure.py --jobs "$chats" --redis-port "$redis_port" --redis-db "$db" --done "$done" \
        --failed "$failed" --server "$model_url" --pids "$(IFS=,; echo "$*")" --server-pid "$model_pid" \
        --postmaster "$postmaster" --redis-pid "$redis_pid"
}

forget_bench_users() {
    psql -q "$DATABASE_URL" -c "DELETE FROM users WHERE id LIKE 'bench-%'" >&2
    psql -q "$DATABASE_URL" -c "VACUUM chat_messages, chat_reservations" >&2
}

run_carbscan() {  # name binary-dir run
    export CARBSCAN_PREFIX=bench-same-$1-$3-$$
    "$bin_dir/slow-provider" seed --chats "$chats" >&2
    curl -sf -X POST "$model_url/stats/reset"
    local workers=()
    for _ in 1 2; do
        # shellcheck disable=SC2086 # the arguments as words
        "$2/carbscan" work $work_args >>"$logs/carbscan.log" 2>&1 &
        workers+=($!)
        pids+=($!)
    done
    local result
    result=$(measure "$redis_db" "HGET $CARBSCAN_PREFIX:{ai}:stats succeeded" "HGET $CARBSCAN_PREFIX:{ai}:stats failed" "${workers[@]}")
    kill "${workers[@]}"
    wait "${workers[@]}" 2>/dev/null || true
    redis-cli -p "$redis_port" --scan --pattern "$CARBSCAN_PREFIX:*" | xargs -r -n 1000 redis-cli -p "$redis_port" unlink >/dev/null
    forget_bench_users
    echo "$1 $3 $result"
}

run_sidekiq() {  # run
    redis-cli -u "$SIDEKIQ_BENCH_REDIS_URL" flushdb >/dev/null
    CARBSCAN_PREFIX=bench-same-unused-$$ "$bin_dir/slow-provider" seed --chats "$chats" >&2
    redis-cli -p "$redis_port" --scan --pattern "bench-same-unused-$$:*" | xargs -r -n 1000 redis-cli -p "$redis_port" unlink >/dev/null
    (cd ops/bench/sidekiq && ruby same_work.rb enqueue bench-) >&2
    curl -sf -X POST "$model_url/stats/reset"
    local workers=()
    for _ in 1 2; do
        (cd ops/bench/sidekiq && exec sidekiq -r ./same_work.rb -c 1000 -q same) >>"$logs/sidekiq.log" 2>&1 &
        workers+=($!)
        pids+=($!)
    done
    local result
    result=$(measure 14 "GET bench:done" "GET bench:failed" "${workers[@]}")
    kill "${workers[@]}"
    wait "${workers[@]}" 2>/dev/null || true
    stored=$(psql -Atq "$DATABASE_URL" -c "SELECT count(*) FROM chat_messages WHERE user_id LIKE 'bench-%'")
    ((stored == chats)) || echo "same-work.sh: Sidekiq stored $stored of $chats answers" >&2
    redis-cli -u "$SIDEKIQ_BENCH_REDIS_URL" flushdb >/dev/null
    forget_bench_users
    echo "sidekiq $1 $result"
}

# Each run in this shell, not a pipeline's subshell: the workers it starts must reach `pids` for the cleanup when a
# run fails (left running, a Sidekiq took the next run's jobs).
forget_bench_users
for run in $(seq "$runs"); do
    if [[ $systems == *carbscan* ]]; then
        run_carbscan carbscan "$bin_dir" "$run" >>"$work/results"
        [[ -z $base_bin ]] || run_carbscan carbscan-base "$base_bin" "$run" >>"$work/results"
    fi
    [[ $systems != *sidekiq* ]] || run_sidekiq "$run" >>"$work/results"
    tail -n 3 "$work/results" >&2
done

python3 - "$work/results" "$chats" "$delay" >"${out:-/dev/stdout}" <<'PY'
import json, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    system, run, result = line.split(" ", 2)
    rows.setdefault(system, []).append(json.loads(result))
print(f"{sys.argv[2]} chats, model delay {int(sys.argv[3]) / 1000:g} s, 2 worker processes each. Medians of the runs (each run's chats/s in brackets).\n")
print("| system | chats/s | × Sidekiq | Postgres CPU µs/chat | worker CPU µs/chat | Postgres cores | worker cores | machine cores | peak RSS MB per worker |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
sidekiq = statistics.median(r["jobs_per_s"] for r in rows.get("sidekiq", [{"jobs_per_s": 0}])) or None
for system in ("carbscan", "carbscan-base", "sidekiq"):
    if system not in rows: continue
    results = rows[system]
    med = lambda key: statistics.median(r[key] for r in results)
    rates = ", ".join(str(r["jobs_per_s"]) for r in results)
    ratio = f"{med('jobs_per_s') / sidekiq:.2f}×" if sidekiq else "–"
    failed = sum(r["failed"] for r in results)
    name = {"carbscan": "carbscan (2 × `carbscan work`)", "carbscan-base": "carbscan, earlier build", "sidekiq": "Sidekiq 2 × -c 1000"}[system]
    print(f"| {name}{f' ({failed} failed)' if failed else ''} | {med('jobs_per_s'):.0f} ({rates}) | {ratio} | {med('postgres_cpu_us_per_job'):.0f} "
          f"| {med('worker_cpu_us_per_job'):.0f} | {med('postgres_cores'):.2f} | {med('worker_cpu_cores'):.2f} | {med('machine_cores'):.2f} "
          f"| {med('peak_rss_mb_per_process'):.0f} |")
PY
