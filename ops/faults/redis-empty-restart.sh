#!/usr/bin/env bash
# Usage: ops/faults/redis-empty-restart.sh [--binary PATH] [--down SECONDS]
# A fault probe on loopback: a private Redis (no persistence) behind a real `carbscan work`, killed with -9 and
# brought back EMPTY after --down seconds (default 5), as a restart without persistence or a failover to an empty
# replica. Reports: whether the worker processes again without a restart, how long after Redis returned the first
# job ran, how many lines the worker logged during the outage, and how long it took to exit on SIGTERM.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
# shellcheck source=ops/lib.sh
source ops/lib.sh
binary=.build/debug/carbscan
down=5
while (($#)); do
    case $1 in
        --binary) binary=$2; shift 2 ;;
        --down) down=$2; shift 2 ;;
        *) echo "unknown argument $1" >&2; exit 64 ;;
    esac
done
require_binary "$binary"

port=$(free_port)
dir=$(mktemp -d)
export REDIS_URL=redis://127.0.0.1:$port/0 CARBSCAN_PREFIX=fault CARBSCAN_JOBS_DIR=jobs
cleanup() { kill -9 "${worker:-0}" 2>/dev/null || true; [[ -f $dir/redis.pid ]] && kill -9 "$(cat "$dir/redis.pid")" 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT
now() { date +%s.%N; }

redis_up "$port" "$dir"
"$binary" work --queues default --concurrency 10 --grace 5 >"$dir/worker.log" 2>&1 &
worker=$!
"$binary" jobs enqueue noop --payload '{"counter":"fault:done"}' >/dev/null
until [[ $(redis-cli -p "$port" get fault:done) == 1 ]]; do sleep 0.02; done
echo "before: a job ran"

kill -9 "$(cat "$dir/redis.pid")"
lines_before=$(wc -l <"$dir/worker.log")
sleep "$down"
redis_up "$port" "$dir"
back=$(now)
lines_during=$(($(wc -l <"$dir/worker.log") - lines_before))
# Enqueue until one goes in (the CLI's first try may meet the restart), then wait for it to run.
until "$binary" jobs enqueue noop --payload '{"counter":"fault:again"}' >/dev/null 2>&1; do sleep 0.05; done
deadline=$(($(date +%s) + 30))
until [[ $(redis-cli -p "$port" get fault:again) == 1 ]]; do
    (($(date +%s) < deadline)) || { echo "FAIL: no job ran within 30 s of Redis coming back"; tail -5 "$dir/worker.log"; exit 1; }
    sleep 0.01
done
recovered=$(now)
echo "after: a job ran $(python3 -c "print(f'{$recovered - $back:.2f}')") s after Redis came back (empty)"
echo "worker log lines while Redis was down ${down} s: $lines_during"
signalled=$(now)
kill -TERM "$worker"
wait "$worker" && status=0 || status=$?
echo "SIGTERM to exit: $(python3 -c "print(f'{$(now) - $signalled:.2f}')") s (status $status)"
