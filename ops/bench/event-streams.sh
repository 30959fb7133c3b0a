#!/usr/bin/env bash
# Event streams: how many jobs/{id}/events streams one `carbscan serve` holds, at what memory, and how fast their
# final events go out.
#   ops/bench/event-streams.sh [--streams N] [--jobs J]     (defaults 10,000 streams over 1,000 queued chats)
# One pro user queues J chats (`Prefer: respond-async`, no worker: they wait); N streams (N/J per job, one connection
# each, ops/bench/sse_clients.py) follow them until each has its `queued` event; serve's resident memory is read
# before and while they are held; then every job is cancelled through the API (`DELETE jobs/{id}`) and the time from
# the first final event to the last one received is measured. Writes ops/bench/results/event-streams-<date>.md.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
streams=10000 jobs=1000
while (($#)); do
    case $1 in
        --streams) streams=$2; shift 2 ;;
        --jobs) jobs=$2; shift 2 ;;
        *) echo "usage: ops/bench/event-streams.sh [--streams N] [--jobs J]" >&2; exit 64 ;;
    esac
done
# shellcheck source=ops/prelude.sh
source ops/prelude.sh
pids=()
cleanup() { ((${#pids[@]} == 0)) || kill "${pids[@]}" 2>/dev/null || true; }
trap cleanup EXIT
ops/services.sh start
# shellcheck source=/dev/null
source .local/env.sh
release_build carbscan
bin=$bin_dir/carbscan
work=$(mktemp -d)
port=18191
export CARBSCAN_PREFIX=bench-sse-$$ JWT_SECRET=bench-secret-bench-secret-bench-secret LOG_LEVEL=warning SYNC_WAIT_SECONDS=0
ulimit -n "$(ulimit -Hn)"
"$bin" migrate >/dev/null
"$bin" serve --port "$port" >"$work/serve.log" 2>&1 &
serve=$!
pids+=("$serve")
base=http://127.0.0.1:$port/api/mobile/v1
for _ in $(seq 100); do curl -sf -o /dev/null "$base/health" && break; sleep 0.1; done
email="sse-$$@example.com"
token=$(curl -sf "$base/auth/register" -H 'Content-Type: application/json' \
    -d "{\"email\":\"$email\",\"password\":\"correct horse\"}" | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["accessToken"])')
psql "$DATABASE_URL" -qc "UPDATE users SET subscription_tier = 'pro' WHERE email = '$email'"
for _ in $(seq "$jobs"); do
    curl -sf "$base/chat" -H "Authorization: Bearer $token" -H 'Content-Type: application/json' -H 'Prefer: respond-async' \
        -d '{"message":"Carbs in rice?"}'
    echo
done | python3 -c 'import json,sys; [print(json.loads(l)["data"]["jobId"]) for l in sys.stdin if l.strip()]' >"$work/jobs"
rss() { ps -o rss= -p "$serve" | tr -d ' '; }
idle_kb=$(rss)
per_job=$((streams / jobs))
python3 ops/bench/sse_clients.py 127.0.0.1 "$port" "$token" "$work/jobs" "$per_job" "$work/ready" "$work/done" &
clients=$!
pids+=("$clients")
for _ in $(seq 600); do [[ -s $work/ready ]] && break; sleep 0.5; done
sleep 2
held_kb=$(rss)
threads=$(ls "/proc/$serve/task" | wc -l)
while read -r job; do
    curl -sf -o /dev/null -X DELETE "$base/jobs/$job" -H "Authorization: Bearer $token" &
    (($(jobs -rp | wc -l) < 32)) || wait -n
done <"$work/jobs"
wait "$clients" || true
after_kb=$(rss)
read -r spread missing <"$work/done"
ready=$(cat "$work/ready")
day=$(date -u +%F)${BENCH_TAG:+-$BENCH_TAG}
mkdir -p ops/bench/results
python3 - "$streams" "$jobs" "$idle_kb" "$held_kb" "$after_kb" "$threads" "$ready" "$spread" "$missing" \
    "ops/bench/results/event-streams-$day.md" <<'PY'
import platform, subprocess, sys, datetime
streams, jobs, idle, held, after, threads = (int(x) for x in sys.argv[1:7])
ready, spread, missing, out = float(sys.argv[7]), float(sys.argv[8]), int(sys.argv[9]), sys.argv[10]
def sh(cmd):
    return subprocess.run(cmd, shell=True, capture_output=True, text=True).stdout.strip()
cpu = sh("lscpu | sed -n 's/^Model name: *//p'")
memory = sh("free -g | awk '/Mem:/{print $2}'")
swift = sh("swift --version 2>&1 | head -1")
redis = sh("redis-server --version").split()[2][2:]
machine = f"{cpu}, {sh('nproc')} cores, {memory} GiB, {platform.system()} {platform.release()}, {swift}, Redis {redis}"
per_stream = (held - idle) / streams
lines = [f"# Event streams, {datetime.date.today().isoformat()}", "", f"Machine: {machine}.", "",
         f"`ops/bench/event-streams.sh --streams {streams} --jobs {jobs}`: one `carbscan serve` (release build, default settings); "
         f"{streams:,} `GET jobs/{{id}}/events` streams, {streams // jobs} per queued chat, each on its own connection from one "
         "Python asyncio client on the same machine; then every job cancelled through the API.", "",
         "| figure | value |", "| --- | --- |",
         f"| streams open and given their first event | {streams - 0:,} in {ready:.1f} s |",
         f"| serve's resident memory, idle (jobs queued) | {idle / 1024:.1f} MiB |",
         f"| serve's resident memory holding the streams | {held / 1024:.1f} MiB ({per_stream:.1f} KiB per stream) |",
         f"| serve's threads holding the streams | {threads} |",
         f"| final events: first to last received | {spread:.2f} s |",
         f"| streams that ended without their final event | {missing} |",
         f"| serve's resident memory after the streams ended | {after / 1024:.1f} MiB |"]
open(out, "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
