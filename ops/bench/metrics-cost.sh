#!/usr/bin/env bash
# What the metrics cost the workers: `carbscan-bench queue --only process`'s process rate with the workers' metrics
# off and on (`--worker-metrics`: `carbscan work --metrics-port 0`), alternated in one run on a private Redis.
#   ops/bench/metrics-cost.sh [--pairs 5] [--runs 3] [--jobs 50000] [--bin PATH]
# --bin: the carbscan binary whose workers are measured (default: a release build of this tree; the benchmark is the
# carbscan-bench beside it).
# Each invocation starts 2 fresh workers and reports the median of --runs process measurements; the pairs alternate
# off/on (then on/off, so neither side always goes first) and the figures are medians over the pairs. During the
# "on" side a scraper reads each worker's /metrics every second, as Prometheus would (every 15 s by default).
# Writes ops/bench/results/metrics-cost-<date>[-BENCH_TAG].md with the machine's description and the raw figures.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
pairs=5 runs=3 jobs=50000 bin=""
while (($#)); do
    case $1 in
        --pairs) pairs=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        --jobs) jobs=$2; shift 2 ;;
        --bin) bin=$2; shift 2 ;;
        *) echo "usage: ops/bench/metrics-cost.sh [--pairs N] [--runs N] [--jobs N] [--bin PATH]" >&2; exit 64 ;;
    esac
done

# shellcheck source=ops/prelude.sh
source ops/prelude.sh
pids=()
cleanup() { ((${#pids[@]} == 0)) || kill "${pids[@]}" 2>/dev/null || true; }
trap cleanup EXIT
if [[ -z $bin ]]; then
    release_build carbscan carbscan-bench
    bin=$bin_dir/carbscan
fi
bench="$(dirname "$bin")/carbscan-bench"
work=$(mktemp -d)
start_private_redis "$work"
pids+=("$private_redis_pid")
export REDIS_URL="redis://127.0.0.1:$private_redis_port/0"

# Scrapes every loopback port the workers of bench process $1 listen on (their --metrics-port 0), once a second,
# until killed; counts the scrapes that answered.
scraper() {
    while sleep 1; do
        for pid in $(pgrep -P "$1"); do
            for port in $(ss -Hltnp 2>/dev/null | grep "pid=$pid," | awk '{print $4}' | sed 's/.*://'); do
                curl -sf -o /dev/null --max-time 1 "http://127.0.0.1:$port/metrics" && echo ok >>"$work/scrapes"
            done
        done
    done
}

measure() { # $1: off|on, $2: pair number
    local flags=()
    [[ $1 == on ]] && flags=(--worker-metrics)
    "$bench" queue --carbscan "$bin" --only process --runs "$runs" --jobs "$jobs" "${flags[@]}" >"$work/$1-$2.json" 2>"$work/$1-$2.err" &
    local bench_pid=$!
    scraper "$bench_pid" &
    local scraper_pid=$!
    wait "$bench_pid"
    kill "$scraper_pid" 2>/dev/null || true
    wait "$scraper_pid" 2>/dev/null || true
    echo "$1 pair $2: $(python3 -c "import json,sys; print(round(json.load(open(sys.argv[1]))['process_per_s']))" "$work/$1-$2.json") jobs/s" >&2
}

for pair in $(seq "$pairs"); do
    if ((pair % 2)); then measure off "$pair"; measure on "$pair"; else measure on "$pair"; measure off "$pair"; fi
done
scrapes=$(wc -l <"$work/scrapes" 2>/dev/null || echo 0)

report=ops/bench/results/metrics-cost-$(date -u +%F)${BENCH_TAG:+-$BENCH_TAG}.md
python3 - "$work" "$pairs" "$runs" "$jobs" "$report" "$(git rev-parse --short HEAD)" "$scrapes" <<'PY'
import json, statistics, sys, datetime
work, pairs, runs, jobs, report, commit, scrapes = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6], sys.argv[7].strip()
sys.path.insert(0, "ops/bench")
from machine import describe
machine = describe()
fig = {side: [json.load(open(f"{work}/{side}-{p}.json")) for p in range(1, pairs + 1)] for side in ("off", "on")}
def med(side, key): return statistics.median(r[key] for r in fig[side])
rate_off, rate_on = med("off", "process_per_s"), med("on", "process_per_s")
cpu_off, cpu_on = med("off", "worker_cpu_us_per_job"), med("on", "worker_cpu_us_per_job")
ratios = [on["process_per_s"] / off["process_per_s"] for off, on in zip(fig["off"], fig["on"])]
cpu_ratios = [on["worker_cpu_us_per_job"] / off["worker_cpu_us_per_job"] for off, on in zip(fig["off"], fig["on"])]
cost = 1 - rate_on / rate_off
lines = [f"# Metrics cost, {datetime.date.today().isoformat()}", "",
    f"Machine: {machine}. Release build of {commit}.",
    f"`ops/bench/metrics-cost.sh --pairs {pairs} --runs {runs} --jobs {jobs}`: `carbscan-bench queue --only process` "
    f"(2 worker processes, {jobs:,} noop jobs per measurement, median of {runs} measurements per invocation), "
    "metrics off and on (`--worker-metrics`, i.e. `carbscan work --metrics-port 0`, with /metrics scraped every second) "
    f"alternated in one run on a private Redis ({scrapes} scrapes answered during the run). Figures: medians over the pairs.", "",
    "| figure | metrics off | metrics on | on / off |", "| --- | ---: | ---: | ---: |",
    f"| process, 2 worker processes, jobs/s | {rate_off:,.0f} | {rate_on:,.0f} | {rate_on / rate_off:.3f} |",
    f"| worker CPU per job, µs | {cpu_off:.1f} | {cpu_on:.1f} | {cpu_on / cpu_off:.3f} |", "",
    f"Cost: the process rate is {cost:+.1%} lower with metrics on (target: at most 5% lower{' ✓' if cost <= 0.05 else ' ✗'}). "
    f"Per-pair ratios on/off: {', '.join(f'{r:.3f}' for r in ratios)} (median {statistics.median(ratios):.3f}); "
    f"worker CPU per job, per-pair ratios: {', '.join(f'{r:.3f}' for r in cpu_ratios)} (median {statistics.median(cpu_ratios):.3f}).", "",
    "Raw figures, pair by pair (the side that went first alternates):", "",
    "| pair | off, jobs/s | on, jobs/s | off, CPU µs/job | on, CPU µs/job |", "| --- | ---: | ---: | ---: | ---: |"]
for p in range(pairs):
    off, on = fig["off"][p], fig["on"][p]
    lines.append(f"| {p + 1} | {off['process_per_s']:,.0f} | {on['process_per_s']:,.0f} | "
                 f"{off['worker_cpu_us_per_job']:.1f} | {on['worker_cpu_us_per_job']:.1f} |")
open(report, "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
