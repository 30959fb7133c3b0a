#!/usr/bin/env bash
# Queue benchmark, carbscan against Sidekiq 6.4 on the same machine and Redis, in one run.
#   ops/bench/queue.sh [--runs N]     (default 3; figures are medians)
# Writes ops/bench/results/queue-<date>.md (with the machine's description) and the raw JSON beside it.
# REPORT_ONLY=1 rewrites the report from that day's JSON. BENCH_TAG=x names the files queue-<date>-x (a second run
# the same day keeps the first).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
runs=3
[[ "${1:-}" == "--runs" ]] && runs="$2"

# shellcheck source=ops/prelude.sh
source ops/prelude.sh
ops/services.sh start redis
# shellcheck source=/dev/null
source .local/env.sh

day="$(date -u +%F)${BENCH_TAG:+-$BENCH_TAG}"
out="ops/bench/results"
mkdir -p "$out"
if [[ "${REPORT_ONLY:-}" != 1 ]]; then
    release_build carbscan carbscan-bench
    echo "carbscan-bench queue --runs $runs" >&2
    "$bin_dir/carbscan-bench" queue --runs "$runs" > "$out/queue-$day-carbscan.json"
    echo "sidekiq reference --runs $runs" >&2
    ops/bench/sidekiq.sh --runs "$runs" > "$out/queue-$day-sidekiq.json"
fi

python3 - "$out/queue-$day-carbscan.json" "$out/queue-$day-sidekiq.json" "$out/queue-$day.md" "$runs" <<'PY'
import json, statistics, sys, datetime
ours, theirs = (json.load(open(p)) for p in sys.argv[1:3])
sys.path.insert(0, "ops/bench")
from machine import describe
machine = describe("ruby --version | cut -d' ' -f1-2")
rows = [
    ("bulk enqueue, jobs/s", "bulk_enqueue_per_s", "higher", 2),
    ("single enqueue (one by one, awaited), jobs/s", "single_enqueue_per_s", "higher", None),
    ("process, 2 worker processes, jobs/s", "process_per_s", "higher", 5),
    ("pickup latency p50, ms", "pickup_p50_ms", "lower", None),
    ("pickup latency p99, ms", "pickup_p99_ms", "lower", 1),
    ("pickup latency max, ms", "pickup_max_ms", "lower", None),
    ("worker CPU per job, µs", "worker_cpu_us_per_job", "lower", 5),
    ("Redis CPU per job, bulk enqueue, µs", "redis_cpu_us_per_job_bulk_enqueue", "lower", None),
    ("Redis CPU per job, process phase (enqueue + run), µs", "redis_cpu_us_per_job_process", "lower", None),
]
lines = [f"# Queue benchmark, {datetime.date.today().isoformat()}", "",
         f"Machine: {machine}.", f"Medians of {sys.argv[4]} runs, both systems measured in one run of `ops/bench/queue.sh` on one Redis "
         "(persistence off). Definitions: `carbscan-bench queue --help` and `ops/bench/sidekiq/bench.rb`.", "",
         "| figure | carbscan | Sidekiq 6.4 | ratio | target |", "| --- | --- | --- | --- | --- |"]
for name, key, better, target in rows:
    a, b = ours[key], theirs[key]
    ratio = a / b if better == "higher" else b / a
    goal = "" if target is None else (f"≥ {target}×" if better == "higher" else ("≤ Sidekiq" if target == 1 else f"≤ 1/{target}"))
    met = "" if target is None else (" ✓" if ratio >= target else " ✗")
    lines.append(f"| {name} | {a:,.1f} | {b:,.1f} | {ratio:.2f}× {'faster' if better == 'higher' else 'better'} | {goal}{met} |")
if "lpush_c1_p1_per_s" in ours:
    share = ours["single_enqueue_share_of_lpush"]
    lines += ["", f"Single enqueue against one round trip: `redis-benchmark -c 1 -P 1 -t lpush` on the same Redis, run by "
              f"`carbscan-bench queue` just before and after its single enqueue (workers idle, as for ours): median "
              f"{ours['lpush_c1_p1_per_s']:,.0f}/s. carbscan's single enqueue is {share:.0%} of it (median of the runs' "
              f"ratios; target ≥ 90%{' ✓' if share >= 0.9 else ' ✗'})."]
if "xadd_c1_p1_per_s" in ours:
    lines += ["", f"The same yardstick with the very `XADD` a noop enqueue sends (`redis-benchmark -c 1 -P 1 XADD …`, "
              f"Redis's own work on the entry included): median {ours['xadd_c1_p1_per_s']:,.0f}/s, "
              f"{ours['xadd_c1_p1_per_s'] / ours['lpush_c1_p1_per_s']:.0%} of LPUSH's; carbscan's single enqueue is "
              f"{ours['single_enqueue_share_of_xadd']:.0%} of it."]
extra = ours.get("single_enqueue_64_in_flight_per_s")
if extra: lines += ["", f"carbscan single enqueue with 64 calls in flight (auto-pipelined): {extra:,.0f} jobs/s."]
lines += ["", f"carbscan: {ours['workers']} workers × concurrency {ours['concurrency_per_worker']}; at-least-once on (stream pending list, batched acks)."]
open(sys.argv[3], "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
