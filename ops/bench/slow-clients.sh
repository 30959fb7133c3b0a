#!/usr/bin/env bash
# Usage: ops/bench/slow-clients.sh [--binary PATH] [--idle-timeout SECONDS] [--slowloris N] [--stalled-bodies N] [--idle N] [--seconds S]
# Slow and abusive clients against `carbscan serve` on loopback (defaults: 1,000 slowloris connections trickling
# headers a byte a second, 1,000 bodies that stop, 10,000 idle keep-alives, HTTP_IDLE_TIMEOUT_SECONDS=10, 30 s):
# a well-behaved client's latency alone and under the attack, and when the server closed the abusers
# (ops/bench/slow_clients.py). Writes ops/bench/results/slow-clients-<date>[-BENCH_TAG].md with the machine.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
binary=.build/release/carbscan timeout=10 seconds=30 slowloris=1000 stalled=1000 idle=10000
while (($#)); do
    case $1 in
        --binary) binary=$2; shift 2 ;;
        --idle-timeout) timeout=$2; shift 2 ;;
        --slowloris) slowloris=$2; shift 2 ;;
        --stalled-bodies) stalled=$2; shift 2 ;;
        --idle) idle=$2; shift 2 ;;
        --seconds) seconds=$2; shift 2 ;;
        *) echo "unknown argument $1" >&2; exit 64 ;;
    esac
done
# shellcheck source=ops/prelude.sh
source ops/prelude.sh
require_binary "$binary"
ops/services.sh start
# shellcheck source=/dev/null
source .local/env.sh
ulimit -n "$(ulimit -Hn)"
port=$(free_port)
log=$(mktemp)
cleanup() { kill "${serve:-0}" 2>/dev/null || true; wait 2>/dev/null || true; rm -f "$log"; ((${#started[@]} == 0)) || ops/services.sh stop "${started[@]}"; }
trap cleanup EXIT
HTTP_IDLE_TIMEOUT_SECONDS=$timeout CARBSCAN_PREFIX=bench-slow LOG_LEVEL=warning "$binary" serve --port "$port" >"$log" 2>&1 &
serve=$!
for _ in $(seq 100); do curl -sf -o /dev/null "http://127.0.0.1:$port/api/mobile/v1/health" && break; sleep 0.1; done
result=$(python3 ops/bench/slow_clients.py 127.0.0.1 "$port" --slowloris "$slowloris" --stalled-bodies "$stalled" \
    --idle "$idle" --seconds "$seconds")
echo "$result"
rss=$(awk '/VmHWM/ {print $2}' "/proc/$serve/status")

out=ops/bench/results/slow-clients-$(date +%F)${BENCH_TAG:+-$BENCH_TAG}.md
{
    echo "# Slow and abusive clients — $(date +%F)"
    echo
    echo "Machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'), $(free -g | awk '/Mem:/ {print $2}') GiB, $(uname -r)."
    echo "Command: ops/bench/slow-clients.sh --binary $binary --idle-timeout $timeout --slowloris $slowloris --stalled-bodies $stalled --idle $idle --seconds $seconds"
    echo "serve peak RSS: $((rss / 1024)) MiB."
    echo
    echo '```json'
    echo "$result"
    echo '```'
} >"$out"
echo "written to $out"
