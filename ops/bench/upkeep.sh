#!/usr/bin/env bash
# Upkeep benchmark: the Redis commands per second that N idle `carbscan work` processes send (promotion of due jobs,
# reclaim of expired leases, the leader lease, and their blocking reads for work), for each N given.
#   ops/bench/upkeep.sh [--workers "2 20"] [--seconds 20] [--bin PATH] [--label NAME]
# Each count runs against a private redis-server on a free port, so nothing else is counted; the workers settle for
# 5 s, then `redis-cli monitor` records for the given seconds (ops/bench/upkeep/monitor.py names each script call by
# the first command it runs). Writes ops/bench/results/upkeep-<date>[-<label>].md with the machine's description.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
counts="2 20" seconds=20 bin="" label=""
while (($#)); do
    case $1 in
        --workers) counts=$2; shift 2 ;;
        --seconds) seconds=$2; shift 2 ;;
        --bin) bin=$2; shift 2 ;;
        --label) label=-$2; shift 2 ;;
        *) echo "usage: ops/bench/upkeep.sh [--workers \"2 20\"] [--seconds S] [--bin PATH] [--label NAME]" >&2; exit 64 ;;
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
ops/services.sh start
# shellcheck source=/dev/null
source .local/env.sh

if [[ -z $bin ]]; then
    release_build carbscan
    bin=$bin_dir/carbscan
fi
work=$(mktemp -d)
start_private_redis "$work"
port=$private_redis_port
pids+=("$private_redis_pid")
export REDIS_URL="redis://127.0.0.1:$port/0" LOG_LEVEL=warning CARBSCAN_PREFIX=carbscan-bench-upkeep

report=ops/bench/results/upkeep-$(date +%F)$label.md
{
    echo "# Upkeep: Redis commands per second from idle workers ($(date -u +%FT%RZ))"
    echo
    echo "Machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'), Redis $(redis-server --version | sed "s/.*v=\([^ ]*\).*/\1/")."
    echo "Binary: $bin ($(git rev-parse --short HEAD)$(git diff --quiet HEAD -- Sources || echo ', uncommitted changes'))."
    echo "Every queue of jobs/ served; ${seconds} s recorded after 5 s of settling. EVALSHA/X is a script whose first command other than TIME is X"
    echo "(ZRANGEBYSCORE: promote, XPENDING: reclaim)."
} >"$report"
for n in $counts; do
    worker_pids=()
    for _ in $(seq "$n"); do
        "$bin" work --concurrency 1 >>"$work/workers.log" 2>&1 &
        worker_pids+=($!)
        pids+=($!)
    done
    sleep 5
    timeout "$seconds" redis-cli -p "$port" monitor >"$work/monitor-$n.txt" 2>/dev/null || true
    kill "${worker_pids[@]}" 2>/dev/null || true
    wait "${worker_pids[@]}" 2>/dev/null || true
    redis-cli -p "$port" flushall >/dev/null
    {
        echo
        echo "## $n idle workers"
        echo
        echo "| calls/s | command |"
        echo "|---:|---|"
        python3 ops/bench/upkeep/monitor.py "$seconds" <"$work/monitor-$n.txt" | awk -F'\t' '{print "| " $1 " | " $2 " |"}'
    } >>"$report"
done
cat "$report"
