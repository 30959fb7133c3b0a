#!/usr/bin/env bash
# Tracing's cost on a worker, side by side (issue 31): two `carbscan work` at their defaults at once on the same Redis,
# each draining its own --jobs no-op jobs (enqueued in bulk under a prefix of its own), one with tracing off
# (OTEL_TRACES_EXPORTER=none), one in the mode measured (exporting to otlp_sink.py); each one's CPU per job from /proc,
# read as its last job is recorded. Both see the same machine, which moves the rates of runs taken one after another
# by ±20% (`tracing.sh`). Per mode, both orders (off started first, then the mode first), and an A/A pair (both off)
# that shows what the second place alone does. A no-op job is the hardest case: about 15 µs of a worker's CPU, and a log
# line each.
#   ops/bench/tracing-side-worker.sh [--rounds 3] [--jobs 200000] [--modes "sampled10 sampled0 sampled100"]
# Modes as `tracing.sh` names them: sampled0 (always_off: only the dropped path), sampled10 (10%), sampled100 (every
# trace). Writes ops/bench/results/tracing-side-worker-<date>.md with the machine (BENCH_TAG=x: …-<date>-x).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
rounds=3 jobs=200000 modes="sampled10 sampled0 sampled100"
while (($#)); do
    case $1 in
        --rounds) rounds=$2; shift 2 ;;
        --jobs) jobs=$2; shift 2 ;;
        --modes) modes=$2; shift 2 ;;
        *) sed -n '2,11p' "$0" >&2; exit 64 ;;
    esac
done
# shellcheck source=ops/prelude.sh
source ops/prelude.sh
pids=()
prefix=bench-tracing-side-worker-$$
cleanup() {
    ((${#pids[@]} == 0)) || kill "${pids[@]}" 2>/dev/null || true
    wait 2>/dev/null || true
    if [[ -n ${redis_port:-} ]]; then
        redis-cli -p "$redis_port" --scan --pattern "$prefix-*" | xargs -r -n 1000 redis-cli -p "$redis_port" unlink >/dev/null || true
    fi
    ((${#started[@]} == 0)) || ops/services.sh stop "${started[@]}"
    rm -rf "${work:-/nonexistent}"
}
trap cleanup EXIT
ops/services.sh start
# shellcheck source=/dev/null
source .local/env.sh
release_build carbscan
work=$(mktemp -d)
sink_port=$(free_port)
redis_port=${REDIS_URL##*:}
redis_port=${redis_port%%/*}
export CARBSCAN_JOBS_DIR=$PWD/jobs
python3 ops/bench/otlp_sink.py "$sink_port" >"$work/sink.log" 2>&1 &
pids+=($!)

# settings MODE: the variables of a tracing mode, one per line.
settings() {
    local endpoint=OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$sink_port
    case $1 in
        off) echo OTEL_TRACES_EXPORTER=none ;;
        sampled0) printf '%s\n' "$endpoint" OTEL_TRACES_SAMPLER=always_off ;;
        sampled10) printf '%s\n' "$endpoint" OTEL_TRACES_SAMPLER=parentbased_traceidratio OTEL_TRACES_SAMPLER_ARG=0.1 ;;
        sampled100) printf '%s\n' "$endpoint" OTEL_TRACES_SAMPLER=parentbased_always_on ;;
        *) echo "tracing-side-worker: unknown mode $1" >&2; exit 64 ;;
    esac
}
cpu() { awk '{print $14+$15}' "/proc/$1/stat"; }
# succeeded PREFIX: how many of its jobs succeeded (0 before the first).
succeeded() {
    local count
    count=$(redis-cli -p "$redis_port" HGET "$1:{default}:stats" succeeded)
    echo "${count:-0}"
}

# round FIRST SECOND: both drain at once; prints the second's CPU per job over the first's (each one's µs per job).
round() {
    local names=("$1" "$2") worker=() ticks=() side
    for side in 0 1; do
        local p=$prefix-$side
        CARBSCAN_PREFIX=$p "$bin_dir/carbscan" jobs enqueue noop --count "$jobs" >/dev/null
    done
    for side in 0 1; do
        local settings_lines
        mapfile -t settings_lines < <(settings "${names[$side]}")
        env "${settings_lines[@]}" CARBSCAN_PREFIX="$prefix-$side" "$bin_dir/carbscan" work --queues default >>"$work/work.log" 2>&1 &
        worker[side]=$!
        pids+=("${worker[side]}")
    done
    while [[ -z ${ticks[0]:-} || -z ${ticks[1]:-} ]]; do
        for side in 0 1; do
            if [[ -z ${ticks[side]:-} ]] && (($(succeeded "$prefix-$side") >= jobs)); then ticks[side]=$(cpu "${worker[side]}"); fi
        done
        sleep 0.05
    done
    kill "${worker[@]}"
    wait "${worker[@]}" 2>/dev/null || true
    for side in 0 1; do
        redis-cli -p "$redis_port" --scan --pattern "$prefix-$side:*" | xargs -r -n 1000 redis-cli -p "$redis_port" unlink >/dev/null
    done
    python3 -c 'import sys; a, b = (float(t) * 1e6 / float(sys.argv[3]) / float(sys.argv[4]) for t in sys.argv[1:3]); print(f"{b / a:.3f} ({a:.1f} and {b:.1f} µs)")' \
        "${ticks[0]}" "${ticks[1]}" "$jobs" "$(getconf CLK_TCK)"
}

results=()
# pair NAME FIRST SECOND: `rounds` rounds of `round FIRST SECOND`.
pair() {
    local ratios=()
    for _ in $(seq "$rounds"); do ratios+=("$(round "$2" "$3")"); done
    results+=("$1|${ratios[*]}")
    echo "tracing-side-worker: $1: ${ratios[*]}" >&2
}
pair "off, then off (A/A): second over first" off off
for mode in $modes; do
    pair "off, then $mode: $mode over off" off "$mode"
    pair "$mode, then off: off over $mode" "$mode" off
done

out=ops/bench/results/tracing-side-worker-$(date +%F)${BENCH_TAG:+-$BENCH_TAG}.md
python3 - "$out" "$rounds" "$jobs" "${results[@]}" <<'PY'
import statistics, sys
sys.path.insert(0, "ops/bench")
import machine
out, rounds, jobs, rows = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
lines = [f"# Tracing's cost on a worker, side by side, {out.split('tracing-side-worker-')[1][:10]}", "",
         f"Machine: {machine.describe()}.", "",
         f"`ops/bench/tracing-side-worker.sh`: two `carbscan work` at their defaults at once, each draining {int(jobs):,} "
         f"no-op jobs of its own, {rounds} rounds a pair; the worker's CPU per job from /proc. Each figure: the second "
         "worker's CPU per job over the first's (in brackets, each one's µs per job). sampled0 is `always_off` (the "
         "dropped path only), sampled10 10% of traces sampled, sampled100 every trace.", "",
         "| pair | median | rounds |", "| --- | --- | --- |"]
for row in rows:
    name, ratios = row.split("|")
    values = [part if part.endswith(")") else part + ")" for part in ratios.split(") ") if part]
    lines.append(f"| {name} | {statistics.median(float(v.split()[0]) for v in values):.3f} | {'; '.join(values)} |")
lines += ["", "A mode's cost is its first pair's ratio, or the inverse of its second's; each against the A/A pair's."]
open(out, "w").write("\n".join(lines) + "\n")
print(out)
PY
