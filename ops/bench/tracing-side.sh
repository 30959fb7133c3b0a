#!/usr/bin/env bash
# Tracing's cost on the API, side by side (issue 31): two `carbscan serve` at once on the same Redis and Postgres, one
# with tracing off (OTEL_TRACES_EXPORTER=none), one at 10% sampled (exporting to otlp_sink.py), each under its own
# wrk -t1 -c16 at the same time, so both see the same machine; serve's CPU per request of each, from /proc. Each
# round's ratio is 10%'s CPU per request over off's. Both orders (off started first, then 10% first) and an A/A
# check (both off), so that what the second process's place costs is seen apart from tracing.
#   ops/bench/tracing-side.sh [--rounds 4] [--duration 8] [--endpoints "logins meals"]
# Writes ops/bench/results/tracing-side-<date>.md with the machine's description (BENCH_TAG=x: tracing-side-<date>-x).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
rounds=4 duration=8 endpoints="logins meals"
while (($#)); do
    case $1 in
        --rounds) rounds=$2; shift 2 ;;
        --duration) duration=$2; shift 2 ;;
        --endpoints) endpoints=$2; shift 2 ;;
        *) sed -n '2,8p' "$0" >&2; exit 64 ;;
    esac
done
# shellcheck source=ops/prelude.sh
source ops/prelude.sh
# The load generator, a benchmark's own need (ops/install.sh installs what the tests need).
apt_install_missing "$(basename "$0")" wrk
pids=()
cleanup() {
    ((${#pids[@]} == 0)) || kill "${pids[@]}" 2>/dev/null || true
    wait 2>/dev/null || true
    ((${#started[@]} == 0)) || ops/services.sh stop "${started[@]}"
    rm -rf "${work:-/nonexistent}"
}
trap cleanup EXIT
ops/services.sh start
# shellcheck source=/dev/null
source .local/env.sh
release_build carbscan
work=$(mktemp -d)
sink_port=$(free_port) port_a=$(free_port) port_b=$(free_port)
export CARBSCAN_PREFIX=bench-tracing-side-$$ LOG_LEVEL=warning JWT_SECRET=bench-secret-bench-secret-bench-secret
export LOGIN_WEBHOOK_URL=http://127.0.0.1:9 LOGIN_MAX_ATTEMPTS_PER_IP=1000000
"$bin_dir/carbscan" migrate >&2
python3 ops/bench/otlp_sink.py "$sink_port" >"$work/sink.log" 2>&1 &
pids+=($!)
off=(OTEL_TRACES_EXPORTER=none)
sampled=(OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$sink_port OTEL_TRACES_SAMPLER=parentbased_traceidratio OTEL_TRACES_SAMPLER_ARG=0.1)

# serve PORT ENV…: starts a serve with those variables; its pid in `serve_pid`.
serve() {
    local port=$1
    shift
    env "$@" "$bin_dir/carbscan" serve --port "$port" >"$work/serve-$port.log" 2>&1 &
    serve_pid=$!
    pids+=("$serve_pid")
    until curl -sf -o /dev/null "http://127.0.0.1:$port/api/mobile/v1/health"; do sleep 0.1; done
}

# The user of GET /meals (ops/lib.sh).
serve "$port_a" "${off[@]}"
base=http://127.0.0.1:$port_a/api/mobile/v1
email="bench-side-$$-$(date +%s)@example.com"
bench_meals_user "$base" "$email"
kill "$serve_pid"
bench_logins_lua "$work/logins.lua"
cpu() { awk '{print $14+$15}' "/proc/$1/stat"; }

results=()
# pair NAME FIRST SECOND: one serve per mode at once; per round, the second's CPU per request over the first's.
pair() {
    local name=$1 first=$2 second=$3 a b endpoint
    local -n first_env=$first second_env=$second
    serve "$port_a" "${first_env[@]}"
    a=$serve_pid
    serve "$port_b" "${second_env[@]}"
    b=$serve_pid
    for endpoint in $endpoints; do
        local args=() ratios=()
        [[ $endpoint == logins ]] && args=(-s "$work/logins.lua")
        for _ in $(seq "$rounds"); do
            local ta tb
            ta=$(cpu "$a") tb=$(cpu "$b")
            wrk -t1 -c16 -d"${duration}s" "${args[@]}" -H "Authorization: Bearer $token" \
                "http://127.0.0.1:$port_a/api/mobile/v1/$endpoint" >"$work/a.txt" &
            local wrk_a=$!
            wrk -t1 -c16 -d"${duration}s" "${args[@]}" -H "Authorization: Bearer $token" \
                "http://127.0.0.1:$port_b/api/mobile/v1/$endpoint" >"$work/b.txt"
            wait "$wrk_a"
            ratios+=("$(python3 - "$ta" "$(cpu "$a")" "$tb" "$(cpu "$b")" "$work/a.txt" "$work/b.txt" <<'PY'
import re, sys
ta0, ta1, tb0, tb1 = map(float, sys.argv[1:5])
requests = [int(re.search(r"(\d+) requests in", open(path).read()).group(1)) for path in sys.argv[5:7]]
a, b = (ta1 - ta0) * 1e4 / requests[0], (tb1 - tb0) * 1e4 / requests[1]
print(f"{b / a:.3f} ({a:.0f} and {b:.0f} µs)")
PY
)")
            bench_clear_jobs "$CARBSCAN_PREFIX"
        done
        results+=("$name|$endpoint|${ratios[*]}")
        echo "tracing-side: $name $endpoint: ${ratios[*]}" >&2
    done
    kill "$a" "$b"
    wait "$a" "$b" 2>/dev/null || true
}
pair "off, then 10%: 10% over off" off sampled
pair "10%, then off: off over 10%" sampled off
pair "off, then off (A/A): second over first" off off
redis-cli -p "${REDIS_URL##*:}" --scan --pattern "$CARBSCAN_PREFIX:*" 2>/dev/null | xargs -r -n 1000 redis-cli -p "${REDIS_URL##*:}" unlink >/dev/null || true

out=ops/bench/results/tracing-side-$(date +%F)${BENCH_TAG:+-$BENCH_TAG}.md
python3 - "$out" "$rounds" "$duration" "${results[@]}" <<'PY'
import statistics, sys
sys.path.insert(0, "ops/bench")
import machine
out, rounds, duration, rows = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
lines = [f"# Tracing's cost on the API, side by side, {out.split('tracing-side-')[1][:10]}", "",
         f"Machine: {machine.describe('psql --version')}.", "",
         f"`ops/bench/tracing-side.sh`: two `carbscan serve` at once, each under wrk -t1 -c16 for {duration} s a round, "
         f"{rounds} rounds; serve's CPU per request from /proc. Each figure: the second serve's CPU per request over the "
         "first's (in brackets, each one's µs per request).", "",
         "| pair | endpoint | median | rounds |", "| --- | --- | --- | --- |"]
for row in rows:
    name, endpoint, ratios = row.split("|")
    values = [part for part in ratios.split(") ") if part]
    medians = statistics.median(float(value.split()[0]) for value in values)
    lines.append(f"| {name} | {endpoint} | {medians:.3f} | {'; '.join(v if v.endswith(')') else v + ')' for v in values)} |")
lines += ["", "10%'s cost is the first pair's ratio, or the inverse of the second's; each against the A/A pair's, which "
          "is what a second serve's place alone does."]
open(out, "w").write("\n".join(lines) + "\n")
print(out)
PY
