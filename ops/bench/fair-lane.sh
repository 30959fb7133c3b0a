#!/usr/bin/env bash
# The fair AI lane as a new user meets it (issue 34's acceptance): the shipped job files (chat's `rate_limit` of 10/s,
# burst 20, and `fair: { by: userId }`), one `carbscan serve` and 2 `carbscan work` at their defaults, a model
# answering every call in 0.2 s (slow_model.py). One pro user queues --burst async chats, then each of --free free
# users asks one (ops/bench/fair_lane.py): how long each free user's answer takes from its submission, and how long
# the burst takes to finish. Mode `fifo` is the same with the `fair:` line taken out of the job files (first in,
# first out: the lane before fair lanes).
#   ops/bench/fair-lane.sh [--runs 3] [--burst 150] [--free 10] [--modes "fair fifo"]
# Writes ops/bench/results/fair-lane-<date>.md (BENCH_TAG=x: fair-lane-<date>-x) with the machine's description.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
runs=3 burst=150 free=10 modes="fair fifo"
while (($#)); do
    case $1 in
        --runs) runs=$2; shift 2 ;;
        --burst) burst=$2; shift 2 ;;
        --free) free=$2; shift 2 ;;
        --modes) modes=$2; shift 2 ;;
        *) sed -n '2,9p' "$0" >&2; exit 64 ;;
    esac
done
# shellcheck source=ops/prelude.sh
source ops/prelude.sh
pids=()
cleanup() {
    ((${#pids[@]} == 0)) || kill "${pids[@]}" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "${work:-/nonexistent}"
}
trap cleanup EXIT
ops/services.sh start
# shellcheck source=/dev/null
source .local/env.sh
release_build carbscan
bin=$bin_dir/carbscan
work=$(mktemp -d)
api_port=$(free_port) model_port=$(free_port)
export JWT_SECRET=bench-secret-bench-secret-bench-secret LOG_LEVEL=warning SYNC_WAIT_SECONDS=0 LOGIN_WEBHOOK_URL=http://127.0.0.1:9
export AI_BASE_URL=http://127.0.0.1:$model_port AI_API_KEY=sk-bench
mkdir "$work/fair" "$work/fifo"
cp jobs/*.yml "$work/fair/"
cp jobs/*.yml "$work/fifo/"
sed -i '/^fair:/d' "$work/fifo/"*.yml
"$bin" migrate >&2
python3 ops/bench/slow_model.py "$model_port" 200 >"$work/model.log" 2>&1 &
pids+=($!)
base=http://127.0.0.1:$api_port/api/mobile/v1

# register EMAIL: the new account's access token.
register() {
    curl -sf "$base/auth/register" -H 'Content-Type: application/json' -d "{\"email\":\"$1\",\"password\":\"bench password\"}" |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["accessToken"])'
}

for run in $(seq "$runs"); do
    for mode in $modes; do
        echo "fair-lane: run $run of $runs, $mode" >&2
        export CARBSCAN_JOBS_DIR=$work/$mode CARBSCAN_PREFIX=bench-fair-$run-$mode-$$
        "$bin" serve --port "$api_port" >>"$work/serve.log" 2>&1 &
        serve=$!
        "$bin" work >>"$work/work.log" 2>&1 &
        worker1=$!
        "$bin" work >>"$work/work.log" 2>&1 &
        worker2=$!
        until curl -sf -o /dev/null "$base/health"; do sleep 0.1; done
        tag=$run-$mode-$$
        pro=$(register "fair-pro-$tag@example.com")
        psql -q "$DATABASE_URL" -c "UPDATE users SET subscription_tier = 'pro' WHERE email = 'fair-pro-$tag@example.com'"
        : >"$work/free"
        for i in $(seq "$free"); do register "fair-free-$i-$tag@example.com" >>"$work/free"; done
        # A fresh bucket per run: the first calls of each find the burst the shipped files allow.
        redis-cli -u "$REDIS_URL" del "$CARBSCAN_PREFIX:ratelimit:ai" >/dev/null
        result=$(python3 ops/bench/fair_lane.py "$base" "$pro" "$work/free" "$burst")
        echo "$mode $result" | tee -a "$work/results" >&2
        kill "$serve" "$worker1" "$worker2" && wait "$serve" "$worker1" "$worker2" 2>/dev/null || true
        redis-cli -u "$REDIS_URL" --scan --pattern "$CARBSCAN_PREFIX:*" | xargs -r -n 1000 redis-cli -u "$REDIS_URL" unlink >/dev/null
        psql -q "$DATABASE_URL" -c "DELETE FROM users WHERE email LIKE 'fair-%-$tag@example.com'"
    done
done
if grep -q '"level":"error"' "$work/serve.log" "$work/work.log"; then
    echo "fair-lane: errors were logged:" >&2
    grep -h '"level":"error"' "$work/serve.log" "$work/work.log" | head -5 >&2
fi

day=$(date -u +%F)${BENCH_TAG:+-$BENCH_TAG}
mkdir -p ops/bench/results
python3 - "$work/results" "$runs" "$burst" "$free" "ops/bench/results/fair-lane-$day.md" <<'PY'
import datetime, json, statistics, sys
sys.path.insert(0, "ops/bench")
from machine import describe
results, runs, burst, free, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
by_mode = {}
for line in open(results):
    mode, text = line.split(" ", 1)
    by_mode.setdefault(mode, []).append(json.loads(text))
names = {"fair": "fair lanes (shipped)", "fifo": "first in, first out (`fair:` removed)"}
lines = [f"# Fair AI lane, {datetime.date.today().isoformat()}", "", f"Machine: {describe()}.", "",
         f"`ops/bench/fair-lane.sh --runs {runs} --burst {burst} --free {free}`: the shipped job files (chat: `rate_limit` "
         "10/s, burst 20), one `carbscan serve` and 2 `carbscan work` at their defaults (release build), a model answering "
         f"in 0.2 s. One pro user queues {burst} async chats, then {free} free users ask one each; each free answer is "
         "followed by long polls. Medians of the runs; target: every free answer within 4 s, their median within 2.5 s.", "",
         "| lane | free users' median answer | free users' worst answer | the burst finished in | failed |",
         "| --- | --- | --- | --- | --- |"]
for mode, rows in by_mode.items():
    median = statistics.median(r["free_median"] for r in rows)
    worst = statistics.median(r["free_worst"] for r in rows)
    whole = statistics.median(r["burst_seconds"] for r in rows)
    failed = sum(r["failed"] for r in rows)
    lines.append(f"| {names.get(mode, mode)} | {median:.2f} s | {worst:.2f} s (at most {max(r['free_worst'] for r in rows):.2f} s) "
                 f"| {whole:.1f} s | {failed} |")
lines += ["", "Per run:", ""]
for mode, rows in by_mode.items():
    for r in rows:
        lines.append(f"- {mode}: free answers {r['free_seconds']} s; burst {r['burst_seconds']} s; failed {r['failed']}")
open(out, "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
