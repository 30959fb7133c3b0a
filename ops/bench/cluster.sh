#!/usr/bin/env bash
# Scale-out benchmark (issue 16 §4): the noop process rate, pickup latency and Redis CPU per job per node on the single
# Redis and on Redis Clusters of 1, 2 and 3 masters, with the same 2 `carbscan work` processes (default settings) in
# every configuration, configurations alternated in each round.
#   ops/bench/cluster.sh [--rounds N] [--jobs N]      (defaults 3 and 20,000; figures are medians over the rounds)
# Configurations: single (a standalone redis-server started afresh each round, as the cluster's nodes are, so both
# start alike), c1 (a cluster of one master), c1-sharded (one master, the noop queue in
# 6 shards), c2 (2 masters, 8 shards: 4 on each), c3 (3 masters, 6 shards: 2 on each). Finished jobs are counted from
# the queue's counts (`carbscan-bench queue --count-from-stats`), not by a counter every job INCRs on one node.
# Writes ops/bench/results/cluster-<date>.md with the machine's description, and the raw JSON lines beside it.
# Leaves the loopback cluster (ops/cluster.sh) stopped. REPORT_ONLY=1 rewrites the report from that day's JSON lines.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
rounds=3
jobs=20000
while (($#)); do
    case $1 in
        --rounds) rounds=$2 ;;
        --jobs) jobs=$2 ;;
        *) echo "usage: ops/bench/cluster.sh [--rounds N] [--jobs N]" >&2; exit 2 ;;
    esac
    shift 2
done

# shellcheck source=ops/prelude.sh
source ops/prelude.sh
single_port=$(free_port)

day="$(date -u +%F)${BENCH_TAG:+-$BENCH_TAG}"
out=ops/bench/results
raw="$out/cluster-$day.jsonl"
work=$(mktemp -d)
trap 'redis_down "$single_port"; rm -rf "$work"; ops/cluster.sh stop >/dev/null 2>&1 || true' EXIT

# jobs_dir SHARDS: the project's kind files, noop in SHARDS shards.
jobs_dir() {
    local dir=$work/jobs-$1
    if [[ ! -d $dir ]]; then
        cp -r jobs "$dir"
        (($1 == 1)) || printf '\nshards: %s\n' "$1" >>"$dir/noop.yml"
    fi
    echo "$dir"
}

if [[ ${REPORT_ONLY:-} == 1 ]]; then rounds=0; else
    release_build carbscan carbscan-bench
    : >"$raw"
fi
for ((round = 1; round <= rounds; round++)); do
    for config in single c1 c1-sharded c2 c3; do
        case $config in
            single) url=redis://127.0.0.1:$single_port/0 shards=1 masters=0 ;;
            c1) url='' shards=1 masters=1 ;;
            c1-sharded) url='' shards=6 masters=1 ;;
            c2) url='' shards=8 masters=2 ;;
            c3) url='' shards=6 masters=3 ;;
        esac
        redis_down "$single_port"
        if ((masters == 0)); then
            redis_up "$single_port" "$work/single"
        else
            ops/cluster.sh start --masters "$masters" >&2
            # shellcheck source=/dev/null
            source .local/cluster/env.sh
            url=$CARBSCAN_CLUSTER_URL
        fi
        echo "round $round: $config" >&2
        result=$(REDIS_URL=$url CARBSCAN_JOBS_DIR=$(jobs_dir "$shards") \
            "$bin_dir/carbscan-bench" queue --only process,pickup --runs 1 --jobs "$jobs" --count-from-stats)
        python3 -c 'import json,sys; r=json.loads(sys.argv[1]); r.update(config=sys.argv[2], round=int(sys.argv[3]), masters=int(sys.argv[4]), shards=int(sys.argv[5])); print(json.dumps(r))' \
            "$result" "$config" "$round" "$masters" "$shards" >>"$raw"
    done
done

rounds=$(python3 -c 'import json,sys; print(max(json.loads(l)["round"] for l in open(sys.argv[1])))' "$raw")
python3 - "$raw" "$out/cluster-$day.md" "$rounds" "$jobs" <<'PY'
import json, statistics, sys, datetime
rows = [json.loads(line) for line in open(sys.argv[1])]
sys.path.insert(0, "ops/bench")
from machine import describe
machine = describe()
configs = ["single", "c1", "c1-sharded", "c2", "c3"]
def med(config, key):
    values = [r[key] for r in rows if r["config"] == config and key in r]
    return statistics.median(values) if values else float("nan")
def ratio(config, key, base):
    # The median of the rounds' ratios: each round's configurations ran one after another on the same machine state.
    values = []
    for n in range(1, int(sys.argv[3]) + 1):
        a = [r[key] for r in rows if r["config"] == config and r["round"] == n]
        b = [r[key] for r in rows if r["config"] == base and r["round"] == n]
        if a and b and b[0]: values.append(a[0] / b[0])
    return statistics.median(values) if values else float("nan")
lines = [f"# Scale-out benchmark, {datetime.date.today().isoformat()}", "", f"Machine: {machine}.",
         f"`ops/bench/cluster.sh --rounds {sys.argv[3]} --jobs {sys.argv[4]}`: `carbscan-bench queue --only process,pickup "
         "--count-from-stats` (2 `carbscan work` processes with default settings, a producer process bulk-enqueueing, "
         "pickup at 200 jobs/s), each configuration once per round, in this order; medians over the rounds. Every "
         "process, every Redis node and the benchmark share the machine's cores.", "",
         "| configuration | masters | noop shards | process, jobs/s | vs single (median of rounds' ratios) | Redis CPU µs/job, all nodes | busiest node | idlest node | pickup p99, ms |",
         "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
for c in configs:
    sample = next(r for r in rows if r["config"] == c)
    lines.append(f"| {c} | {sample['masters'] or 'standalone'} | {sample['shards']} | {med(c, 'process_per_s'):,.0f} | "
                 f"{ratio(c, 'process_per_s', 'single'):.2f} | {med(c, 'redis_cpu_us_per_job_process'):.1f} | "
                 f"{med(c, 'redis_cpu_us_per_job_process_busiest_node'):.1f} | {med(c, 'redis_cpu_us_per_job_process_idlest_node'):.1f} | "
                 f"{med(c, 'pickup_p99_ms'):.2f} |")
one = med("c1-sharded", "redis_cpu_us_per_job_process")
lines += ["", f"Cluster mode on one master against the single Redis (same queue, unsharded): "
          f"{ratio('c1', 'process_per_s', 'single'):.2f} of its rate (target ≥ 0.90).",
          "Redis CPU per job per node against one master holding all 6 shards "
          f"({one:.1f} µs): " + ", ".join(
              f"{n} masters: busiest {med(c, 'redis_cpu_us_per_job_process_busiest_node'):.1f} µs = "
              f"{med(c, 'redis_cpu_us_per_job_process_busiest_node') / one:.2f} (1/{n} = {1 / n:.2f})"
              for c, n in (("c2", 2), ("c3", 3))) + "."]
open(sys.argv[2], "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
