#!/usr/bin/env bash
# Tracing cost benchmark (issue 31): the same work with tracing off (OTEL_TRACES_EXPORTER=none), on with 10% of traces
# sampled (OTEL_TRACES_SAMPLER=parentbased_traceidratio, _ARG=0.1) and on with every trace sampled (and, as mode
# `sampled0`, on with none sampled: OTEL_TRACES_SAMPLER=always_off, what tracing costs before any span), spans exported
# over OTLP/HTTP (protobuf) to a local endpoint that discards them (otlp_sink.py). Everything else at its defaults
# (the batch span processor's 5 s delay, queue of 2,048 spans, batches of 512).
#   ops/bench/tracing.sh [--runs 3] [--duration 10] [--chats 4000] [--noops 100000] [--modes "off sampled10 sampled100"]
#                        [--profile]
# Per run and mode, alternating: an authenticated GET /meals (JWT check, session check, a page of 20 meals: a server
# span and its statements' spans) and an enqueueing POST /logins (a server span and a producer span) with wrk -t2
# -c32 against one `carbscan serve`; then --chats chat jobs seeded in Postgres and Redis (slow-provider seed) and
# drained by one `carbscan work --queues ai` from a model answering at once (slow_model.py): chats/s and the
# worker's CPU per chat (a consumer span, the model call's client span and the statements' spans per chat); then
# --noops no-op jobs enqueued in bulk (`carbscan jobs enqueue noop --count`) and drained by one `carbscan work` at its
# defaults (a consumer span per job and nothing else: the queue's own process rate), by drain_measure.py.
# serve's CPU per request is read from /proc over each wrk run, and also given as the median of each run's ratio to off
# (the modes alternate, so a run pairs them). `--chats 0` or `--noops 0` leaves that part out. Medians; writes ops/bench/results/tracing-<date>.md
# with the machine's description (BENCH_TAG=x: tracing-<date>-x).
# --profile also records each measured process with `perf record -a -g` (frame pointers, 999 Hz) and reports the share of
# its CPU samples whose stack holds a tracing frame (trace_share.py): tracing's own cost, measured directly, where the
# rates compared above move ±10% from run to run. perf slows what it records, so read the rates of such a run as
# perturbed, and take them from a run without it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
runs=3 duration=10 chats=4000 noops=100000 modes="off sampled10 sampled100" profile=false
while (($#)); do
    case $1 in
        --runs) runs=$2; shift 2 ;;
        --duration) duration=$2; shift 2 ;;
        --chats) chats=$2; shift 2 ;;
        --noops) noops=$2; shift 2 ;;
        --modes) modes=$2; shift 2 ;;
        --profile) profile=true; shift ;;
        *) sed -n '2,21p' "$0" >&2; exit 64 ;;
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
    # The jobs POST /logins enqueued (no worker drains them) and anything else left under this run's prefixes.
    if [[ -n ${redis_port:-} ]]; then
        redis-cli -p "$redis_port" --scan --pattern "bench-tracing-*$$:*" | xargs -r -n 1000 redis-cli -p "$redis_port" unlink >/dev/null || true
    fi
    ((${#started[@]} == 0)) || ops/services.sh stop "${started[@]}"
    rm -rf "${work:-/nonexistent}"
}
trap cleanup EXIT
ops/services.sh start
# shellcheck source=/dev/null
source .local/env.sh
release_build carbscan slow-provider
work=$(mktemp -d)
api_port=$(free_port) model_port=$(free_port) sink_port=$(free_port)
redis_port=${REDIS_URL##*:}
redis_port=${redis_port%%/*}
postmaster=$(psql -Atq "$DATABASE_URL" -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'" | xargs -r ps -o ppid= -p | tr -d ' ')

# The shipped job files with the AI bucket out of the way (as slow-provider.sh does).
mkdir "$work/jobs" && cp jobs/*.yml "$work/jobs/"
sed -i 's/^rate_limit: { name: ai, .*}/rate_limit: { name: ai, per_second: 1000000, burst: 1000000 }/' "$work/jobs/chat.yml" "$work/jobs/analysis.yml"
export CARBSCAN_JOBS_DIR=$work/jobs LOG_LEVEL=warning JWT_SECRET=bench-secret-bench-secret-bench-secret
export LOGIN_WEBHOOK_URL=http://127.0.0.1:9
"$bin_dir/carbscan" migrate >&2
python3 ops/bench/slow_model.py "$model_port" 0 >"$work/model.log" 2>&1 &
model_pid=$!
python3 ops/bench/otlp_sink.py "$sink_port" >"$work/sink.log" 2>&1 &
sink_pid=$!
pids+=("$model_pid" "$sink_pid")
export AI_BASE_URL=http://127.0.0.1:$model_port AI_API_KEY=sk-bench
until curl -sf "$AI_BASE_URL/stats" >/dev/null && curl -sf "http://127.0.0.1:$sink_port/stats" >/dev/null; do sleep 0.05; done

# in_mode MODE COMMAND…: runs COMMAND in the background with that mode's OTEL_ variables; its pid in `started_pid`.
in_mode() {
    local mode=$1
    shift
    local settings=("OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$sink_port")
    case $mode in
        off) settings=("OTEL_TRACES_EXPORTER=none") ;;
        sampled0) settings+=("OTEL_TRACES_SAMPLER=always_off") ;;
        sampled10) settings+=("OTEL_TRACES_SAMPLER=parentbased_traceidratio" "OTEL_TRACES_SAMPLER_ARG=0.1") ;;
        sampled100) settings+=("OTEL_TRACES_SAMPLER=parentbased_always_on") ;;
    esac
    env "${settings[@]}" "$@" &
    started_pid=$!
}

# wait_for_serve: until `serve` (pid in $serve) answers; stops the script, with serve's log, if it exited (a bad job
# file once left this waiting forever).
wait_for_serve() {
    until curl -sf -o /dev/null "$base/health"; do
        kill -0 "$serve" 2>/dev/null || { tail -3 "$work/serve.log" >&2; exit 1; }
        sleep 0.1
    done
}

# profile_start PID: with --profile, records stacks until profile_stop, of the whole machine: `perf record -p` follows
# only the threads that exist as it starts, and a process that has just started makes more (the cooperative pool's).
profile_start() {
    $profile || return 0
    profiled=$1
    perf record -q -a -F 999 -g -o "$work/perf.data" >/dev/null 2>&1 &
    perf_pid=$!
    sleep 0.2
}

# profile_stop NAME MODE: with --profile, ends the recording and appends "MODE {share…}" of the process's samples to
# $work/NAME_share.
profile_stop() {
    $profile || return 0
    kill -INT "$perf_pid" && wait "$perf_pid" 2>/dev/null || true
    echo "$2 $(perf script -i "$work/perf.data" --pid "$profiled" -F comm,ip,sym 2>/dev/null | python3 ops/bench/trace_share.py)" \
        >>"$work/$1_share"
}

# cpu_ticks PID: the process's user + system CPU so far, in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

bench_logins_lua "$work/logins.lua"

# A user with 50 recent meals, for GET /meals.
export CARBSCAN_PREFIX=bench-tracing-$$
"$bin_dir/carbscan" serve --port "$api_port" >"$work/serve.log" 2>&1 &
serve=$!
base=http://127.0.0.1:$api_port/api/mobile/v1
wait_for_serve
email="bench-tracing-$(date +%s%N)@example.com"
bench_meals_user "$base" "$email"
kill "$serve" && wait "$serve" 2>/dev/null || true

for run in $(seq "$runs"); do
    for mode in $modes; do
        echo "tracing: run $run of $runs, $mode" >&2
        in_mode "$mode" "$bin_dir/carbscan" serve --port "$api_port" >>"$work/serve.log" 2>&1
        serve=$started_pid
        wait_for_serve
        # serve's own CPU (utime + stime, in clock ticks) over each wrk run: a cost per request that the machine's
        # noise moves far less than the request rate.
        profile_start "$serve"
        ticks0=$(cpu_ticks "$serve")
        wrk -t2 -c32 -d"${duration}s" --latency -H "Authorization: Bearer $token" "$base/meals" >"$work/wrk.txt"
        ticks1=$(cpu_ticks "$serve")
        profile_stop meals "$mode"
        python3 ops/bench/wrk_result.py "$mode" "$work/wrk.txt" >>"$work/meals"
        echo "$mode $((ticks1 - ticks0))" >>"$work/meals_ticks"
        profile_start "$serve"
        ticks1=$(cpu_ticks "$serve")
        wrk -t2 -c32 -d"${duration}s" --latency -H "Authorization: Bearer $token" -s "$work/logins.lua" "$base/logins" >"$work/wrk.txt"
        ticks2=$(cpu_ticks "$serve")
        profile_stop logins "$mode"
        python3 ops/bench/wrk_result.py "$mode" "$work/wrk.txt" >>"$work/logins"
        bench_clear_jobs "$CARBSCAN_PREFIX"
        echo "$mode $((ticks2 - ticks1))" >>"$work/logins_ticks"
        kill "$serve" && wait "$serve" 2>/dev/null || true
        if ((chats > 0)); then
            # Chats: seeded straight into Postgres and Redis, then drained by one worker in this mode.
            export CARBSCAN_PREFIX=bench-tracing-$run-$mode-$$
            "$bin_dir/slow-provider" seed --chats "$chats" --analyses 0 >&2
            curl -sf -X POST "$AI_BASE_URL/stats/reset"
            in_mode "$mode" "$bin_dir/carbscan" work --queues ai >>"$work/work.log" 2>&1
            worker=$started_pid
            profile_start "$worker"
            result=$(python3 ops/bench/slow_provider_measure.py --jobs "$chats" --redis-port "$redis_port" \
                --done "HGET $CARBSCAN_PREFIX:{ai}:stats succeeded" --failed "HGET $CARBSCAN_PREFIX:{ai}:stats failed" \
                --server "$AI_BASE_URL" --pids "$worker" --server-pid "$model_pid" --postmaster "$postmaster" \
                --extra-pid "sink=$sink_pid")
            profile_stop chats "$mode"
            kill "$worker" && wait "$worker" 2>/dev/null || true
            echo "$mode $result" >>"$work/chats"
            redis-cli -p "$redis_port" --scan --pattern "$CARBSCAN_PREFIX:*" | xargs -r -n 1000 redis-cli -p "$redis_port" unlink >/dev/null
            psql -q "$DATABASE_URL" -c "DELETE FROM users WHERE id LIKE 'bench-%'" >&2
        fi
        if ((noops > 0)); then
            # No-op jobs: the queue's own rate, a consumer span per job.
            export CARBSCAN_PREFIX=bench-tracing-noop-$run-$mode-$$
            "$bin_dir/carbscan" jobs enqueue noop --count "$noops" >/dev/null
            in_mode "$mode" "$bin_dir/carbscan" work --queues default >>"$work/work.log" 2>&1
            worker=$started_pid
            profile_start "$worker"
            result=$(python3 ops/bench/drain_measure.py --jobs "$noops" --redis-port "$redis_port" \
                --done "HGET $CARBSCAN_PREFIX:{default}:stats succeeded" --pids "$worker")
            profile_stop noops "$mode"
            kill "$worker" && wait "$worker" 2>/dev/null || true
            echo "$mode $result" >>"$work/noops"
            redis-cli -p "$redis_port" --scan --pattern "$CARBSCAN_PREFIX:*" | xargs -r -n 1000 redis-cli -p "$redis_port" unlink >/dev/null
        fi
    done
done
psql -q "$DATABASE_URL" -c "DELETE FROM users WHERE email = '$email'" >&2
curl -sf "http://127.0.0.1:$sink_port/stats" >"$work/sink.json"
if grep -q '"level":"error"' "$work/serve.log" "$work/work.log"; then
    echo "tracing: errors were logged:" >&2
    grep -h '"level":"error"' "$work/serve.log" "$work/work.log" | head -5 >&2
fi

day="$(date -u +%F)${BENCH_TAG:+-$BENCH_TAG}"
mkdir -p ops/bench/results
python3 - "$work" "ops/bench/results/tracing-$day.md" "$runs" "$duration" "$chats" "$noops" <<'PY'
import json, platform, statistics, subprocess, sys, datetime
def sh(cmd):
    return subprocess.run(cmd, shell=True, capture_output=True, text=True).stdout.strip()
work, out, runs, duration, chats_per_run, noops_per_run = sys.argv[1:7]
def wrk_rows(name):
    rows = {}
    for line in open(f"{work}/{name}"):
        mode, rps, p99, bad = line.split()
        rows.setdefault(mode, []).append((float(rps), float(p99), int(bad)))
    return rows
meals, logins, chats, noops = wrk_rows("meals"), wrk_rows("logins"), {}, {}
import os
clock_ticks = os.sysconf("SC_CLK_TCK")
def cpu_per_request(name, rows):
    # serve's CPU over each wrk run (in the order the runs were written) per request it answered, µs.
    per_mode, seen = {}, {}
    for line in open(f"{work}/{name}_ticks"):
        mode, ticks = line.split()
        index = seen.get(mode, 0)
        seen[mode] = index + 1
        rps = rows[mode][index][0]
        per_mode.setdefault(mode, []).append(int(ticks) / clock_ticks * 1e6 / (rps * int(duration)))
    return per_mode
meals_cpu, logins_cpu = cpu_per_request("meals", meals), cpu_per_request("logins", logins)
for name, rows in (("chats", chats), ("noops", noops)):
    for line in (open(f"{work}/{name}") if os.path.exists(f"{work}/{name}") else []):
        mode, text = line.split(" ", 1)
        rows.setdefault(mode, []).append(json.loads(text))
sink = json.load(open(f"{work}/sink.json"))
med = statistics.median
cpu = sh("lscpu | sed -n 's/^Model name: *//p'")
memory = sh("free -g | awk '/Mem:/{print $2}'")
machine = (f"{cpu}, {sh('nproc')} cores, {memory} GiB, {platform.system()} {platform.release()}, "
           f"{sh('swift --version 2>&1 | head -1')}, {sh('/usr/lib/postgresql/15/bin/postgres --version')}")
names = {"off": "off", "sampled0": "on, no trace sampled (always_off)", "sampled10": "on, 10% of traces sampled", "sampled100": "on, every trace sampled"}
base = {"meals": med(r for r, _, _ in meals["off"]) if "off" in meals else None,
        "logins": med(r for r, _, _ in logins["off"]) if "off" in logins else None,
        "chats": med(r["jobs_per_s"] for r in chats["off"]) if "off" in chats else None,
        "noops": med(r["jobs_per_s"] for r in noops["off"]) if "off" in noops else None}
def vs(value, key):
    return f" ({value / base[key] - 1:+.1%})" if base[key] and value != base[key] else ""
lines = [f"# Tracing cost, {datetime.date.today().isoformat()}", "", f"Machine: {machine}.", "",
         f"`ops/bench/tracing.sh`: medians of {runs} runs, the modes alternating within each run; release builds; spans "
         "exported over OTLP/HTTP protobuf to a local endpoint that discards them (otlp_sink.py), the batch span "
         f"processor at its defaults. wrk -t2 -c32 for {duration} s per endpoint against one `carbscan serve`; "
         f"{chats_per_run} chats drained by one `carbscan work --queues ai` at its defaults from a model answering at once; "
         f"{noops_per_run} no-op jobs enqueued in bulk and drained by one `carbscan work` at its defaults.", "",
         "| tracing | GET /meals req/s | p99 ms | serve µs/req | POST /logins req/s | p99 ms | serve µs/req | chats/s | worker µs/chat | sink µs/chat | no-op jobs/s | worker µs/job |",
         "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
for mode in [m for m in names if m in meals]:
    rows = chats.get(mode, [])
    m_rps, l_rps = med(r for r, _, _ in meals[mode]), med(r for r, _, _ in logins[mode])
    c_rps = med(r["jobs_per_s"] for r in rows) if rows else None
    sink_us = med(r["sink_cores"] * r["seconds"] * 1e6 / r["jobs"] for r in rows) if rows else None
    n_rps = med(r["jobs_per_s"] for r in noops[mode]) if noops.get(mode) else None
    m_cpu, l_cpu = med(meals_cpu[mode]), med(logins_cpu[mode])
    m_base, l_base = (med(meals_cpu["off"]), med(logins_cpu["off"])) if "off" in meals_cpu else (None, None)
    cpu_vs = lambda value, base: f" ({value / base - 1:+.1%})" if base and value != base else ""
    lines.append(f"| {names[mode]} | {m_rps:,.0f}{vs(m_rps, 'meals')} | {med(p for _, p, _ in meals[mode]):.2f} | "
                 f"{m_cpu:.0f}{cpu_vs(m_cpu, m_base)} | "
                 f"{l_rps:,.0f}{vs(l_rps, 'logins')} | {med(p for _, p, _ in logins[mode]):.2f} | "
                 f"{l_cpu:.0f}{cpu_vs(l_cpu, l_base)} | "
                 + (f"{c_rps:,.0f}{vs(c_rps, 'chats')} | {med(r['worker_cpu_us_per_job'] for r in rows):.0f} | {sink_us:.0f} | "
                    if rows else "– | – | – | ")
                 + (f"{n_rps:,.0f}{vs(n_rps, 'noops')} | {med(r['worker_cpu_us_per_job'] for r in noops[mode]):.1f} |"
                    if n_rps else "– | – |"))
# The modes alternate within each run, so each run pairs a mode with off measured minutes apart: the median of those
# pairs' ratios is steadier than the ratio of the medians on a machine whose speed drifts.
if "off" in meals_cpu:
    lines += ["", "serve's CPU per request against off, median of the runs' pairs (each run's ratio in brackets):", ""]
    for mode in [m for m in names if m in meals_cpu and m != "off"]:
        cells = []
        for label, per_mode in (("GET /meals", meals_cpu), ("POST /logins", logins_cpu)):
            ratios = [x / y for x, y in zip(per_mode[mode], per_mode["off"])]
            cells.append(f"{label} {med(ratios) - 1:+.1%} ({', '.join(f'{r:.2f}' for r in ratios)})")
        lines.append(f"- {names[mode]}: " + "; ".join(cells))
shares = {}
for name in ("meals", "logins", "chats", "noops"):
    for line in (open(f"{work}/{name}_share") if os.path.exists(f"{work}/{name}_share") else []):
        mode, text = line.split(" ", 1)
        shares.setdefault(name, {}).setdefault(mode, []).append(json.loads(text))
if shares:
    labels = {"meals": "serve, GET /meals", "logins": "serve, POST /logins", "chats": "worker, chats", "noops": "worker, no-op jobs"}
    lines += ["", "Tracing's own share of each process's CPU (`--profile`: perf samples whose stack holds a tracing frame, "
              "trace_share.py; median of the runs, each run in brackets):", "",
              "| tracing | " + " | ".join(labels[n] for n in shares) + " |", "| --- |" + " --- |" * len(shares)]
    for mode in [m for m in names if any(m in s for s in shares.values())]:
        cells = []
        for name in shares:
            runs_of = [r["share_pct"] for r in shares[name].get(mode, []) if r["share_pct"] is not None]
            cells.append(f"{med(runs_of):.1f}% ({', '.join(f'{x:.1f}' for x in runs_of)})" if runs_of else "–")
        lines.append(f"| {names[mode]} | " + " | ".join(cells) + " |")
    lines += ["", "Where it went at 10% (outermost tracing frame, share of all samples, first run):", ""]
    for name in shares:
        first = (shares[name].get("sampled10") or [None])[0]
        if first:
            lines.append(f"- {labels[name]}: " + "; ".join(f"`{frame[:60]}` {pct}%" for frame, pct in first["top"]))
lines += ["", f"The sink received {sink['requests']:,} export requests, {sink['bytes'] / 1e6:,.1f} MB in all.", "", "Per run:", ""]
for mode in meals:
    bad = sum(b for _, _, b in meals[mode] + logins[mode])
    lines.append(f"- {mode}: GET /meals " + ", ".join(f"{r:,.0f}/s" for r, _, _ in meals[mode])
                 + "; POST /logins " + ", ".join(f"{r:,.0f}/s" for r, _, _ in logins[mode])
                 + (f" ({bad} non-2xx)" if bad else "")
                 + "; chats " + ", ".join(f"{r['jobs_per_s']}/s (failed {r['failed']})" for r in chats.get(mode, []))
                 + "; no-op jobs " + ", ".join(f"{r['jobs_per_s']:,}/s" for r in noops.get(mode, [])))
lines += ["", "Each drain as slow_provider_measure.py reported it:", ""]
lines += [f"- {mode}: `{json.dumps(r)}`" for mode, rows in chats.items() for r in rows]
open(out, "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
