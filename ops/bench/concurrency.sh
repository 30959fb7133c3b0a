#!/usr/bin/env bash
# Worker concurrency benchmark: how fast 2 `carbscan work` processes drain N queued noop jobs at each --concurrency,
# driven only through the CLI (the defaults as an operator meets them), on a private Redis.
#   ops/bench/concurrency.sh [--jobs 50000] [--runs 3] [--levels "10 25 50 100 200"] [--bin PATH]
# Per run: 2 workers start and settle, `carbscan jobs enqueue noop --count N` queues the jobs (the workers start on
# them meanwhile), and the time from the enqueue's start to the last success (the queue's stats, polled every 20 ms) gives jobs/s; the levels alternate
# within each run so the machine's drift hits all alike. Writes ops/bench/results/concurrency-<date>[-BENCH_TAG].md.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
jobs=50000 runs=3 levels="10 25 50 100 200" bin=""
while (($#)); do
    case $1 in
        --jobs) jobs=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        --levels) levels=$2; shift 2 ;;
        --bin) bin=$2; shift 2 ;;
        *) echo "usage: ops/bench/concurrency.sh [--jobs N] [--runs N] [--levels \"10 100\"] [--bin PATH]" >&2; exit 64 ;;
    esac
done

# shellcheck source=ops/prelude.sh
source ops/prelude.sh
pids=()
cleanup() {
    ((${#pids[@]} == 0)) || kill "${pids[@]}" 2>/dev/null || true
    ((${#started[@]} == 0)) || ops/services.sh stop "${started[@]}"
}
trap cleanup EXIT
if [[ -z $bin ]]; then
    release_build carbscan
    bin=$bin_dir/carbscan
fi
work=$(mktemp -d)
start_private_redis "$work"
port=$private_redis_port
pids+=("$private_redis_pid")
export REDIS_URL="redis://127.0.0.1:$port/0" LOG_LEVEL=warning

for run in $(seq "$runs"); do
    for level in $levels; do
        export CARBSCAN_PREFIX="bench-concurrency-$level-$run"
        worker_pids=()
        for _ in 1 2; do
            "$bin" work --queues default --concurrency "$level" >>"$work/workers.log" 2>&1 &
            worker_pids+=($!)
            pids+=($!)
        done
        sleep 2
        start=$(date +%s.%N)
        "$bin" jobs enqueue noop --payload '{}' --count "$jobs" >/dev/null
        until [[ $(redis-cli -p "$port" hget "$CARBSCAN_PREFIX:{default}:stats" succeeded) == "$jobs" ]]; do sleep 0.02; done
        end=$(date +%s.%N)
        kill "${worker_pids[@]}"
        wait "${worker_pids[@]}" 2>/dev/null || true
        redis-cli -p "$port" flushall >/dev/null
        echo "$level $run $(python3 -c "print(round($jobs / ($end - $start)))")" | tee -a "$work/results" >&2
    done
done

report=ops/bench/results/concurrency-$(date +%F)${BENCH_TAG:+-$BENCH_TAG}.md
python3 - "$work/results" "$jobs" "$runs" >"$report" <<'PY'
import statistics, subprocess, sys
rows = [line.split() for line in open(sys.argv[1])]
by_level = {}
for level, _, rate in rows:
    by_level.setdefault(int(level), []).append(int(rate))
sh = lambda c: subprocess.run(c, shell=True, capture_output=True, text=True).stdout.strip()
print(f"# Worker concurrency: 2 workers draining {sys.argv[2]} queued noop jobs ({sh('date -u +%FT%RZ')})\n")
cpu = sh("lscpu | sed -n 's/^Model name: *//p'")
redis = sh("redis-server --version").split()[2][2:]
print(f"Machine: {sh('nproc')} cores, {cpu}, Redis {redis}, release build.")
print(f"Driven through the CLI only; {sys.argv[3]} runs, levels alternating within each run; jobs/s from the enqueue's start (a separate CLI process) to the last success.\n")
print("| --concurrency | jobs/s per run | median |\n|---:|---|---:|")
for level in sorted(by_level):
    rates = by_level[level]
    print(f"| {level} | {', '.join(map(str, rates))} | {round(statistics.median(rates))} |")
PY
cat "$report"
