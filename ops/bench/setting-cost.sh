#!/usr/bin/env bash
# What a queue's fair lanes (docs/fair-lanes.md) and its global limit (docs/operating.md) cost the queue itself:
# `carbscan-bench queue --only process,pickup` for the noop kind as shipped (`plain`), with `fair: { by: stamp }` added
# (`fair`), and with `global_limit: 2000` added (`global`: as many as the 2 workers' slots, so it costs without binding).
# The pickup jobs carry distinct stamps, so there every job has a lane of its own (the case fairness should cost least
# in); the process phase's jobs are all alike, one lane. The modes alternate within each run; medians.
#   ops/bench/setting-cost.sh [--runs 3]
# Writes ops/bench/results/setting-cost-<date>.md (BENCH_TAG=x: setting-cost-<date>-x) with the machine's description.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
runs=3
while (($#)); do
    case $1 in
        --runs) runs=$2; shift 2 ;;
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
release_build carbscan carbscan-bench
modes=(plain fair global)
for mode in "${modes[@]}"; do
    mkdir "$work/$mode"
    cp jobs/*.yml "$work/$mode/"
done
sed -i 's/^payload:$/fair: { by: stamp }\npayload:/' "$work/fair/noop.yml"
grep -q '^fair:' "$work/fair/noop.yml"
echo 'global_limit: 2000' >>"$work/global/noop.yml"
for run in $(seq "$runs"); do
    for mode in "${modes[@]}"; do
        echo "setting-cost: run $run of $runs, $mode" >&2
        "$bin_dir/carbscan-bench" queue --runs 1 --only process,pickup --jobs-dir "$work/$mode" >>"$work/$mode.json"
    done
done
day=$(date -u +%F)${BENCH_TAG:+-$BENCH_TAG}
mkdir -p ops/bench/results
python3 - "$work" "$runs" "ops/bench/results/setting-cost-$day.md" <<'PY'
import datetime, json, statistics, sys
sys.path.insert(0, "ops/bench")
from machine import describe
work, runs, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def rows(mode):
    text = open(f"{work}/{mode}.json").read()
    decoder, at, found = json.JSONDecoder(), 0, []
    while at < len(text):
        while at < len(text) and text[at].isspace():
            at += 1
        if at >= len(text):
            break
        value, at = decoder.raw_decode(text, at)
        found.append(value)
    return found
def median(mode, key):
    values = [r["runs"][0][key] if "runs" in r else r[key] for r in rows(mode)]
    return statistics.median(values), values
lines = [f"# What fair lanes and a global limit cost the queue, {datetime.date.today().isoformat()}", "",
         f"Machine: {describe()}.", "",
         f"`ops/bench/setting-cost.sh --runs {runs}`: `carbscan-bench queue --runs 1 --only process,pickup` per mode and run, "
         "the modes alternating (2 `carbscan work` at their defaults; process: 20,000 alike no-op jobs, one lane; pickup: "
         "2,000 jobs at 200/s, each with a lane of its own). `fair` adds `fair: { by: stamp }` to the noop kind, `global` "
         "adds `global_limit: 2000` (as many as the workers' slots: its cost, not its bound).", "",
         "| figure | plain | fair | fair / plain | global | global / plain |", "| --- | --- | --- | --- | --- | --- |"]
for key, name in [("process_per_s", "jobs processed per second"), ("worker_cpu_us_per_job", "worker CPU per job, µs"),
                  ("redis_cpu_us_per_job_process", "Redis CPU per job, µs"), ("pickup_p50_ms", "pickup p50, ms"),
                  ("pickup_p99_ms", "pickup p99, ms")]:
    plain = median("plain", key)[0]
    fair = median("fair", key)[0]
    limited = median("global", key)[0]
    lines.append(f"| {name} | {plain:,.1f} | {fair:,.1f} | {fair / plain:.2f} | {limited:,.1f} | {limited / plain:.2f} |")
lines += ["", "Per run (plain; fair; global):", ""]
for key in ["process_per_s", "pickup_p99_ms"]:
    lines.append(f"- {key}: " + "; ".join(str([round(v, 1) for v in median(mode, key)[1]]) for mode in ["plain", "fair", "global"]))
open(out, "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
