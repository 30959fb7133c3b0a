#!/usr/bin/env bash
# Usage: ops/bench/soak.sh [--binary PATH] [--minutes N] [--restart-every MINUTES]     (defaults: release build, 30, 5)
# A soak run on loopback (issue 18 §3): a private PostgreSQL 15 and a Redis with AOF (everysec) behind one
# `carbscan serve`, two `carbscan work` (every queue) and one `carbscan schedule`, with a fake OpenAI-compatible
# model and a fake PostgREST login table (soak/model.py, 0.5-2 s per AI answer). soak/traffic.py sends N minutes of
# mixed traffic (sign-ins, POST logins, meal syncs, analyses and chats, sync and async, device registrations) from
# 40 pro-tier users. Every --restart-every minutes one worker gets SIGTERM and is started again (alternating), and
# Redis is shut down and started again once (same port and dir, 5 s down) just after half time. Every minute the
# RSS, open fds and threads of every process go to a CSV. At the end the queues are drained and soak/report.py
# checks the totals (jobs enqueued = succeeded + dead, per queue) and the effects in Postgres and at the login
# table (one per job), and writes ops/bench/results/soak-<date>.{md,csv,png} (BENCH_TAG=x: soak-<date>-x).
# The logs stay in the printed /var/tmp/carbscan-soak-* folder; its databases are removed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
binary=.build/release/carbscan minutes=30 restart_every=5
while (($#)); do
    case $1 in
        --binary) binary=$2; shift 2 ;;
        --minutes) minutes=$2; shift 2 ;;
        --restart-every) restart_every=$2; shift 2 ;;
        *) echo "usage: ops/bench/soak.sh [--binary PATH] [--minutes N] [--restart-every MINUTES]" >&2; exit 64 ;;
    esac
done
# shellcheck source=ops/lib.sh
source ops/lib.sh
require_binary "$binary"
binary=$(realpath "$binary")
python_tool matplotlib matplotlib
here=$PWD/ops/bench/soak
tag=soak-$(date -u +%F)${BENCH_TAG:+-$BENCH_TAG}
results=$PWD/ops/bench/results/$tag
pg_bin=/usr/lib/postgresql/15/bin
sample_seconds=${SOAK_SAMPLE_SECONDS:-60}
now() { date +%s; }

dir=$(mktemp -d /var/tmp/carbscan-soak-XXXX)
chmod 755 "$dir"
mkdir "$dir/redis"
pg_port=$(free_port) redis_port=$(free_port) api_port=$(free_port) model_port=$(free_port)
declare -A pid=()
cleanup() {
    for name in "${!pid[@]}"; do kill -9 "${pid[$name]}" 2>/dev/null || true; done
    as_pg "$pg_bin/pg_ctl" -D "$dir/pg" -m immediate -s stop 2>/dev/null || true
    redis_down "$redis_port"
    rm -rf "$dir/pg" "$dir/redis"
    echo "logs: $dir"
}
trap cleanup EXIT

# The services.
mkdir "$dir/pg" && if [[ $(id -u) == 0 ]]; then chown postgres "$dir/pg"; fi
as_pg "$pg_bin/initdb" -D "$dir/pg" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null
as_pg "$pg_bin/pg_ctl" -D "$dir/pg" -l "$dir/pg/log" -w -s -o "-p $pg_port -k $dir/pg -c listen_addresses=127.0.0.1" start
psql=("$pg_bin/psql" -h 127.0.0.1 -p "$pg_port" -U postgres -v ON_ERROR_STOP=1 -q)
"${psql[@]}" -c "CREATE DATABASE carbscan"
# AOF on (fsync every second); the pid and log beside the data, which the cleanup removes.
redis_start() {
    redis_up "$redis_port" "$dir/redis" --appendonly yes --appendfsync everysec --pidfile "$dir/redis.pid" \
        --logfile "$dir/redis.log"
}
redis_start
python3 "$here/model.py" "$model_port" "$dir" 2>"$dir/model.log" &
pid[model]=$!

export DATABASE_URL=postgres://postgres@127.0.0.1:$pg_port/carbscan REDIS_URL=redis://127.0.0.1:$redis_port/0
export CARBSCAN_PREFIX=soak CARBSCAN_JOBS_DIR=$PWD/jobs JWT_SECRET=$(openssl rand -hex 32)
export LOGIN_MAX_ATTEMPTS_PER_IP=1000000 LOGIN_MAX_FAILURES=1000000
export AI_BASE_URL=http://127.0.0.1:$model_port AI_API_KEY=soak-model-key
export LOGIN_WEBHOOK_URL=http://127.0.0.1:$model_port/rest/v1 LOGIN_WEBHOOK_API_KEY=soak-login-key

# The processes: every log is appended to, so a restarted worker continues its file.
start() { # start NAME ARGS...: runs the binary in the background as pid[NAME]
    local name=$1; shift
    "$binary" "$@" >>"$dir/$name.log" 2>&1 &
    pid[$name]=$!
}
start serve serve --port "$api_port" --migrate
base=http://127.0.0.1:$api_port/api/mobile/v1
until curl -sf "$base/health" >/dev/null; do sleep 0.1; done
start work-1 work --concurrency 10
start work-2 work --concurrency 10
start schedule schedule
python3 "$here/traffic.py" "$base" "$dir" setup 40
"${psql[@]}" -d carbscan -c "UPDATE users SET subscription_tier = 'pro', remaining_scans = 300, scan_reset_date = now() + interval '28 days'"

{
    echo "date: $(date -u '+%F %T') UTC, $minutes minutes, a worker restarted every $restart_every minutes"
    echo "nproc: $(nproc)"
    echo "cpu: $(lscpu | grep 'Model name' | sed 's/.*: *//')"
    echo "memory: $(free -g | awk '/^Mem/{print $2 " GiB total, " $7 " GiB available"}')"
    echo "kernel: $(uname -sr)"
    echo "binary: $binary ($(stat -c %s "$binary") bytes, built $(date -u -r "$binary" '+%F %T') UTC, sha256 $(sha256sum "$binary" | cut -c1-12)); checkout at $(git rev-parse --short HEAD)"
    echo "build: ${SOAK_BUILD_INFO:-unknown (set SOAK_BUILD_INFO)}"
    echo "services: $("$pg_bin/postgres" --version), $(redis-server --version | cut -d' ' -f1-3)"
} >"$dir/machine.txt"
cat "$dir/machine.txt"

# The run: traffic in the background; this loop samples, restarts workers and Redis on their times.
csv=$dir/samples.csv events=$dir/events.txt
echo "minute,seconds,process,pid,rss_kb,fds,threads" >"$csv"
: >"$events"
python3 "$here/traffic.py" "$base" "$dir" run $((minutes * 60)) >"$dir/traffic.log" 2>&1 &
pid[traffic]=$!
t0=$(now)
event() { echo "$(($(now) - t0)) $*" | tee -a "$events"; }
proc_stat() { # proc_stat PID: "rss_kb fds threads" from /proc; fails when the process is gone
    local status
    status=$(cat "/proc/$1/status" 2>/dev/null) || return 1
    echo "$(awk '/^VmRSS/{print $2}' <<<"$status") $(ls "/proc/$1/fd" 2>/dev/null | wc -l) $(awk '/^Threads/{print $2}' <<<"$status")"
}
sample() {
    local minute=$(( ($(now) - t0 + 30) / 60 )) t=$(($(now) - t0)) name p pm s a b rss=0 fds=0 n=0
    for name in serve work-1 work-2 schedule model traffic; do
        if s=$(proc_stat "${pid[$name]}"); then echo "$minute,$t,$name,${pid[$name]},${s// /,}" >>"$csv"
        elif [[ $name != traffic ]] && ! grep -q "^[0-9]* $name died" "$events"; then
            event "$name died ($(tail -1 "$dir/$name.log" | cut -c1-200))"
        fi
    done
    p=$(cat "$dir/redis.pid" 2>/dev/null) && s=$(proc_stat "$p") && echo "$minute,$t,redis,$p,${s// /,}" >>"$csv"
    # Postgres: the postmaster and its backends summed; the thread column is the process count.
    pm=$(head -1 "$dir/pg/postmaster.pid")
    for p in "$pm" $(pgrep -P "$pm"); do
        s=$(proc_stat "$p") || continue
        read -r a b _ <<<"$s"
        rss=$((rss + a)) fds=$((fds + b)) n=$((n + 1))
    done
    echo "$minute,$t,postgres,$pm,$rss,$fds,$n" >>"$csv"
}
restart_worker() { # SIGTERM, wait for the exit, start again
    local name=$1 old=${pid[$1]} began status
    began=$(now)
    kill -TERM "$old"
    wait "$old" && status=0 || status=$?
    start "$name" work --concurrency 10
    event "$name restarted: pid $old exited $status after $(($(now) - began)) s, new pid ${pid[$name]}"
}
restart_redis() {
    local began
    began=$(now)
    redis-cli -p "$redis_port" shutdown >/dev/null 2>&1 || true
    while [[ -f $dir/redis.pid ]] && kill -0 "$(cat "$dir/redis.pid")" 2>/dev/null; do sleep 0.05; done
    event "redis shut down (AOF kept) after $(($(now) - began)) s"
    sleep 5
    redis_start
    event "redis started again"
}
end=$((minutes * 60)) next_sample=0 next_restart=$((restart_every * 60)) redis_at=$((minutes * 30 + 20)) redis_done=0 slot=1
while :; do
    t=$(($(now) - t0))
    if ((t >= next_sample)); then sample; next_sample=$((next_sample + sample_seconds)); fi
    ((t >= end)) && break
    if ((t >= next_restart)); then restart_worker "work-$slot"; slot=$((3 - slot)); next_restart=$((next_restart + restart_every * 60)); fi
    if ((!redis_done && t >= redis_at)); then restart_redis; redis_done=1; fi
    sleep 1
done
event "traffic time over; waiting for the clients' last answers"
wait "${pid[traffic]}" || event "traffic exited $?"
unset 'pid[traffic]'
tail -1 "$dir/traffic.log"

# Drain: every queue empty (queued, running, scheduled, retrying), at most 15 minutes.
left() { python3 -c 'import json,sys; print(sum(q["queued"]+q["running"]+q["scheduled"]+q["retrying"] for q in json.load(sys.stdin)))'; }
deadline=$(($(now) + 900))
until [[ $("$binary" jobs stats --json | tee "$dir/stats.json" | left) == 0 ]]; do
    (($(now) < deadline)) || { event "queues not drained after 15 minutes"; break; }
    sleep 2
done
event "queues drained"
"$binary" jobs stats
"$binary" jobs dead list --json >"$dir/dead.json" || true

# Stop the Swift processes as an operator would; an exit status other than 0 is a finding.
for name in serve work-1 work-2 schedule; do
    kill -TERM "${pid[$name]}" 2>/dev/null || true
    wait "${pid[$name]}" && status=0 || status=$?
    event "$name stopped by SIGTERM: exit $status"
    unset "pid[$name]"
done

cp "$csv" "$results.csv"
"$venv/bin/python3" "$here/plot.py" "$csv" "$events" "$results.png"
PSQL="${psql[*]} -d carbscan" python3 "$here/report.py" "$dir" "$results" "$restart_every"
echo "results: $results.md, $results.png, $results.csv"
