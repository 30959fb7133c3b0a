#!/usr/bin/env bash
# The process rate a user sees (issue 34, part 4): N no-op jobs queued first, then 2 worker processes at their
# defaults, the queue watched every 0.5 s, carbscan (user_drain.py: `jobs enqueue --count`, `carbscan work`,
# `jobs stats`) against Sidekiq 6.4 (sidekiq/drain.rb: push_bulk, `sidekiq`, Sidekiq::Queue) in alternation.
#   ops/bench/user-drain.sh [--runs 3] [--jobs 300000]
# Both log at INFO to a file, their default level. Writes ops/bench/results/user-drain-<date>.md (BENCH_TAG=x:
# user-drain-<date>-x) with the machine's description; medians.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
runs=3
jobs=300000
while (($#)); do
    case $1 in
        --runs) runs=$2; shift 2 ;;
        --jobs) jobs=$2; shift 2 ;;
        *) sed -n '2,7p' "$0" >&2; exit 64 ;;
    esac
done
# shellcheck source=ops/prelude.sh
source ops/prelude.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ops/services.sh start
# shellcheck source=/dev/null
source .local/env.sh
release_build carbscan
ops/bench/sidekiq.sh --help >/dev/null 2>&1 || true # installs ruby-sidekiq when missing
for run in $(seq "$runs"); do
    echo "user-drain: run $run of $runs, carbscan" >&2
    python3 ops/bench/user_drain.py --binary "$bin_dir/carbscan" --jobs "$jobs" --prefix "user-drain-$run-$$" \
        --log "$work/carbscan.log" >>"$work/carbscan.json"
    redis-cli -p "${REDIS_PORT:-56379}" --scan --pattern "user-drain-$run-$$:*" | xargs -r -n 1000 redis-cli -p "${REDIS_PORT:-56379}" unlink >/dev/null
    echo "user-drain: run $run of $runs, sidekiq" >&2
    (cd ops/bench/sidekiq && ruby drain.rb --jobs "$jobs" --log "$work/sidekiq.log") >>"$work/sidekiq.json"
done
day=$(date -u +%F)${BENCH_TAG:+-$BENCH_TAG}
mkdir -p ops/bench/results
python3 - "$work" "$runs" "$jobs" "ops/bench/results/user-drain-$day.md" <<'PY'
import datetime, json, statistics, sys
sys.path.insert(0, "ops/bench")
from machine import describe
work, runs, jobs, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
rows = {side: [json.loads(l) for l in open(f"{work}/{side}.json") if l.strip()] for side in ["carbscan", "sidekiq"]}
def median(side, key):
    return statistics.median(r[key] for r in rows[side])
machine = describe("ruby --version | cut -d' ' -f1-2")
lines = [f"# The process rate a user sees, {datetime.date.today().isoformat()}", "", f"Machine: {machine}.", "",
         f"`ops/bench/user-drain.sh --runs {runs} --jobs {jobs}`: {jobs:,} no-op jobs queued first, then 2 worker "
         "processes at their defaults (INFO logs to a file), the queue read every 0.5 s as its user would: carbscan "
         "(`jobs enqueue --count`, `carbscan work`, `jobs stats --json`) and Sidekiq 6.4 (`push_bulk`, `sidekiq`, "
         "`Sidekiq::Queue#size`), alternating; medians.", "",
         "| figure | carbscan | Sidekiq | ratio |", "| --- | --- | --- | --- |"]
for key, name, better in [("from_start_per_s", "jobs/s from the workers' start", "higher"),
                          ("from_first_progress_per_s", "jobs/s from the first job done", "higher"),
                          ("worker_cpu_us_per_job", "worker CPU per job, µs", "lower"),
                          ("redis_cpu_us_per_job", "Redis CPU per job, µs (the stats readings included)", "lower"),
                          ("enqueue_s", "enqueueing them, s", "lower")]:
    ours, theirs = median("carbscan", key), median("sidekiq", key)
    ratio = ours / theirs if better == "higher" else theirs / ours
    lines.append(f"| {name} | {ours:,.1f} | {theirs:,.1f} | {ratio:.2f}× |")
lines += ["", "Per run:", ""]
for side in ["carbscan", "sidekiq"]:
    lines.append(f"- {side}: " + "; ".join(json.dumps(r) for r in rows[side]))
open(out, "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
