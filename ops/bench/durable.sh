#!/usr/bin/env bash
# Cost of durable enqueue (issue 16 §3): enqueue rates with `CARBSCAN_DURABLE_ENQUEUE=1` (every enqueue waits, with
# `WAIT 1 timeout`, until a replica holds it) against the same enqueues without it, on one Redis master with one
# replica, both started afresh by this script. The two modes alternate in each round.
#   ops/bench/durable.sh [--rounds N] [--jobs N]      (defaults 5 and 10,000; figures are medians over the rounds)
# Figures are those of `carbscan-bench queue --only bulk,single --workers 0`: one by one (each enqueue awaited before the
# next), 64 in flight, and bulk (1,000 a call). The replica shares the machine's 2 cores with the master and the
# producer. Writes ops/bench/results/durable-<date>.md with the machine's description, and the raw JSON lines beside it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
rounds=5
jobs=10000
while (($#)); do
    case $1 in
        --rounds) rounds=$2 ;;
        --jobs) jobs=$2 ;;
        *) echo "usage: ops/bench/durable.sh [--rounds N] [--jobs N]" >&2; exit 2 ;;
    esac
    shift 2
done

# shellcheck source=ops/prelude.sh
source ops/prelude.sh
day="$(date -u +%F)${BENCH_TAG:+-$BENCH_TAG}"
out=ops/bench/results
raw="$out/durable-$day.jsonl"
work=$(mktemp -d)
master=$(free_port)
replica=$(free_port)
trap 'for port in $replica $master; do redis_down "$port"; done; rm -rf "$work"' EXIT
redis_up "$master" "$work/master"
redis_up "$replica" "$work/replica" --replicaof 127.0.0.1 "$master"
until redis-cli -p "$replica" info replication 2>/dev/null | tr -d '\r' | grep -q '^master_link_status:up'; do sleep 0.05; done

if [[ ${REPORT_ONLY:-} == 1 ]]; then rounds=0; else
    release_build carbscan carbscan-bench
    : >"$raw"
fi
for ((round = 1; round <= rounds; round++)); do
    for replicas in 0 1; do
        echo "round $round: durable enqueue $replicas" >&2
        result=$(REDIS_URL=redis://127.0.0.1:$master/0 CARBSCAN_DURABLE_ENQUEUE=$replicas \
            "$bin_dir/carbscan-bench" queue --only bulk,single --runs 1 --jobs "$jobs" --workers 0)
        python3 -c 'import json,sys; r=json.loads(sys.argv[1]); r.update(round=int(sys.argv[2])); print(json.dumps(r))' \
            "$result" "$round" >>"$raw"
    done
done

python3 - "$raw" "$out/durable-$day.md" "$jobs" <<'PY'
import datetime, json, statistics, sys
sys.path.insert(0, "ops/bench")
from machine import describe
rows = [json.loads(line) for line in open(sys.argv[1])]
rounds = sorted({r["round"] for r in rows})
def med(replicas, key):
    return statistics.median(r[key] for r in rows if r["durable_enqueue_replicas"] == replicas)
def ratio(key):
    # The median of the rounds' ratios: each round's two modes ran one after the other on the same machine state.
    pairs = [[r[key] for r in rows if r["round"] == n and r["durable_enqueue_replicas"] == m] for n in rounds for m in (0, 1)]
    return statistics.median(on[0] / off[0] for off, on in zip(pairs[0::2], pairs[1::2]) if off and on)
figures = [("one by one, awaited, jobs/s", "single_enqueue_per_s"), ("64 in flight, jobs/s", "single_enqueue_64_in_flight_per_s"),
           ("bulk (1,000 a call), jobs/s", "bulk_enqueue_per_s"),
           ("Redis CPU per job, bulk, master only, µs", "redis_cpu_us_per_job_bulk_enqueue")]
lines = [f"# Durable enqueue cost, {datetime.date.today().isoformat()}", "", f"Machine: {describe()}.",
         f"`ops/bench/durable.sh --rounds {len(rounds)} --jobs {sys.argv[3]}`: one Redis master and one replica on loopback; "
         "`carbscan-bench queue --only bulk,single --workers 0` with `CARBSCAN_DURABLE_ENQUEUE` 0 and 1 alternated in each "
         "round; medians over the rounds.", "",
         "| figure | plain | durable (WAIT 1) | durable / plain (median of rounds' ratios) |", "| --- | --- | --- | --- |"]
for name, key in figures:
    lines.append(f"| {name} | {med(0, key):,.1f} | {med(1, key):,.1f} | {ratio(key):.2f} |")
lines += ["", f"The one-by-one bound, `redis-benchmark -c 1 -P 1` LPUSH on the master in the same runs: "
          f"{statistics.median(r['lpush_c1_p1_per_s'] for r in rows):,.0f}/s."]
open(sys.argv[2], "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
