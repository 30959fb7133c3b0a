#!/usr/bin/env bash
# API benchmark: requests/s and p99 latency of the mobile API against Hummingbird's bare hello world, in one run.
#   ops/bench/api.sh [--runs N] [--duration SECONDS] [--connections C] [--replica]   (defaults 3, 10, 32; figures are medians)
# Measures, with wrk on loopback: GET / of `carbscan-bench hello-server`, and its GET /redis (the same plus one XADD
# through the project's Redis client: the floor of any enqueueing endpoint) and POST /body (the same hello world
# reading POST /logins's body whole), POST /enqueue and GET /page (hello world plus POST /logins's enqueue, plus
# GET /meals's statement with its rows undecoded: the floors this stack's own clients leave); an authenticated
# GET /meals (JWT check, session check and a page of 20 meals from Postgres); an enqueueing POST /logins (JWT check,
# validation, one job into Redis); POST chat with `Prefer: respond-async` from 8 pro users (the chat counted and
# reserved and its job written to the outbox in one transaction, then enqueued and the row deleted: the transactional
# enqueue's path).
# Writes ops/bench/results/api-<date>.md with the machine's description; BENCH_TAG=x names it api-<date>-x, so several
# runs of one day are kept. BENCH_REDIS_URL runs the API's queue on another Redis (a cluster); BENCH_CARBSCAN_BIN
# serves the API from another build of carbscan (a before/after of one change, same day, same script).
# --replica also starts a streaming replica of the local Postgres (ops/replica.sh) and a second `serve` reading from it
# (DATABASE_READ_URL, DATABASE_READ_POOL_SIZE=8 like the primary's pool), and measures GET /meals through it in the
# same runs: the reads on the replica (plus the read-your-writes mark read from Redis) against the reads on the primary.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
runs=3 duration=10 connections=32 replica=false
while (($#)); do
    case $1 in
        --runs) runs=$2; shift 2 ;;
        --duration) duration=$2; shift 2 ;;
        --connections) connections=$2; shift 2 ;;
        --replica) replica=true; shift ;;
        *) echo "usage: ops/bench/api.sh [--runs N] [--duration SECONDS] [--connections C] [--replica]" >&2; exit 64 ;;
    esac
done

# shellcheck source=ops/prelude.sh
source ops/prelude.sh
# The load generator, a benchmark's own need (ops/install.sh installs what the tests need).
apt_install_missing "$(basename "$0")" wrk
if ! command -v wrk >/dev/null; then
    sudo=()
    [[ $(id -u) == 0 ]] || sudo=(sudo)
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends wrk
fi
pids=()
cleanup() {
    ((${#pids[@]} == 0)) || kill "${pids[@]}" 2>/dev/null || true
    ((${#started[@]} == 0)) || ops/services.sh stop "${started[@]}"
    [[ -z ${replica_started:-} ]] || ops/replica.sh stop
}
trap cleanup EXIT
ops/services.sh start
# shellcheck source=/dev/null
source .local/env.sh
# BENCH_REDIS_URL: another Redis for the API's queue, e.g. a cluster (`ops/cluster.sh start`, redis://127.0.0.1:17001).
REDIS_URL=${BENCH_REDIS_URL:-$REDIS_URL}
export REDIS_URL

release_build carbscan carbscan-bench
bin=${BENCH_CARBSCAN_BIN:-$bin_dir/carbscan}
work=$(mktemp -d)
api_port=18181 hello_port=18182
export CARBSCAN_PREFIX=carbscan-bench JWT_SECRET=bench-secret-bench-secret-bench-secret LOGIN_WEBHOOK_URL=http://127.0.0.1:9
export LOG_LEVEL=warning LOGIN_MAX_ATTEMPTS_PER_IP=1000000
"$bin" migrate >/dev/null
"$bin" serve --port "$api_port" >"$work/api.log" 2>&1 &
pids+=($!)
"$bin_dir/carbscan-bench" hello-server --port "$hello_port" >"$work/hello.log" 2>&1 &
pids+=($!)
urls=("http://127.0.0.1:$api_port/api/mobile/v1/health" "http://127.0.0.1:$hello_port/")
if $replica; then
    ops/replica.sh status >/dev/null 2>&1 || replica_started=1
    ops/replica.sh start
    # shellcheck source=/dev/null
    source .local/replica/env.sh
    replica_api_port=18183
    DATABASE_READ_URL=$CARBSCAN_REPLICA_URL DATABASE_READ_POOL_SIZE=8 "$bin" serve --port "$replica_api_port" \
        >"$work/api-replica.log" 2>&1 &
    pids+=($!)
    urls+=("http://127.0.0.1:$replica_api_port/api/mobile/v1/health")
fi
for url in "${urls[@]}"; do
    for _ in $(seq 100); do curl -sf -o /dev/null "$url" && break; sleep 0.1; done
done

base="http://127.0.0.1:$api_port/api/mobile/v1"
email="bench-$(date +%s%N)@example.com"
bench_meals_user "$base" "$email"
if $replica; then
    # The replica replays the meals (CARBSCAN_REPLICA_DELAY behind); the user's marks from registering and syncing are
    # then replayed, so their reads go to the replica.
    target=$(psql "$DATABASE_URL" -Atc "SELECT pg_current_wal_lsn()")
    for _ in $(seq 300); do
        [[ $(psql "$CARBSCAN_REPLICA_URL" -Atc "SELECT pg_last_wal_replay_lsn() >= '$target'::pg_lsn") == t ]] && break
        sleep 0.1
    done
    sleep 1
fi

# Chats come from 8 pro users (no daily limit), a user per request in turn: one user's counter row would serialize them.
chat_tokens=()
for i in $(seq 8); do
    chat_email="bench-chat-$i-$(date +%s%N)@example.com"
    chat_tokens+=("$(curl -sf "$base/auth/register" -H 'Content-Type: application/json' \
        -d "{\"email\":\"$chat_email\",\"password\":\"bench password\"}" |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["accessToken"])')")
    psql "$DATABASE_URL" -qc "UPDATE users SET subscription_tier = 'pro' WHERE email = '$chat_email'"
done
{
    echo "tokens = {"
    printf '  "%s",\n' "${chat_tokens[@]}"
    echo "}"
    cat <<'LUA'
counter = 0
request = function()
    counter = counter + 1
    local headers = {["Content-Type"] = "application/json", ["Prefer"] = "respond-async",
                     ["Authorization"] = "Bearer " .. tokens[counter % #tokens + 1]}
    return wrk.format("POST", nil, headers, '{"message":"How many carbs are in a banana?"}')
end
LUA
} >"$work/chat.lua"

bench_logins_lua "$work/logins.lua"

# measure NAME URL [wrk args...]: one wrk run; appends "NAME requests_per_s p99_ms non2xx" to results.
measure() {
    local name=$1 url=$2
    shift 2
    wrk -t2 -c"$connections" -d"${duration}s" --latency "$@" "$url" >"$work/wrk.txt"
    python3 ops/bench/wrk_result.py "$name" "$work/wrk.txt" >>"$work/results"
}

user_id=$(psql "$DATABASE_URL" -Atc "SELECT id FROM users WHERE email = '$email'")
family=$(psql "$DATABASE_URL" -Atc "SELECT family_id FROM refresh_tokens WHERE user_id = '$user_id' LIMIT 1")
for run in $(seq "$runs"); do
    echo "api bench: run $run of $runs" >&2
    measure hello "http://127.0.0.1:$hello_port/"
    measure hello_redis "http://127.0.0.1:$hello_port/redis"
    measure hello_enqueue "http://127.0.0.1:$hello_port/enqueue" -s "$work/logins.lua"
    bench_clear_jobs carbscan-bench
    measure hello_post "http://127.0.0.1:$hello_port/body" -s "$work/logins.lua"
    measure hello_page "http://127.0.0.1:$hello_port/page?user=$user_id&family=$family"
    measure meals "$base/meals" -H "Authorization: Bearer $token"
    if $replica; then
        measure meals_replica "http://127.0.0.1:$replica_api_port/api/mobile/v1/meals" -H "Authorization: Bearer $token"
    fi
    measure logins "$base/logins" -H "Authorization: Bearer $token" -s "$work/logins.lua"
    bench_clear_jobs carbscan-bench
    measure chat "$base/chat" -s "$work/chat.lua"
    bench_clear_jobs carbscan-bench
done

# The ceiling Postgres alone sets: the one statement an authenticated GET /meals runs (Store's
# Meals.page(ofUser:liveSession:…): the account's tier and live sign-in, and the page of meals in its window),
# through pgbench's C client with prepared statements and as many connections, no HTTP and no Swift. Keep the SQL
# in step with Sources/Store/Meals.swift.
cat >"$work/page.sql" <<SQL
WITH u AS MATERIALIZED (SELECT since, (SELECT count(*) FROM meals WHERE user_id = '$user_id' AND created_at >= COALESCE(since, '-infinity')) AS total FROM (SELECT CASE subscription_tier WHEN 'free' THEN now() - interval '7 days' WHEN 'essentials' THEN now() - interval '30 days' END AS since FROM users WHERE id = '$user_id' AND ('$family'::uuid IS NULL OR NOT EXISTS (SELECT 1 FROM refresh_tokens WHERE family_id = '$family' AND revoked_at IS NOT NULL))) w) SELECT u.since, u.total, m.* FROM u LEFT JOIN LATERAL (SELECT id, local_id, name, carb_estimate, confidence_low, confidence_high, confidence_level, analysis, created_at, updated_at FROM meals WHERE user_id = '$user_id' AND created_at >= COALESCE(u.since, '-infinity') ORDER BY created_at DESC, id DESC LIMIT 20 OFFSET 0) m ON true;
SQL
for run in $(seq "$runs"); do
    tps=$(pgbench -n -M prepared -c "$connections" -j 2 -T "$duration" -f "$work/page.sql" "$DATABASE_URL" 2>/dev/null |
        sed -n 's/^tps = \([0-9.]*\).*/\1/p')
    echo "pg_page $tps 0 0" >>"$work/results"
done
redis-cli -u "$REDIS_URL" --scan --pattern 'carbscan-bench:*' | xargs -r -n 500 redis-cli -u "$REDIS_URL" unlink >/dev/null || true

day="$(date -u +%F)${BENCH_TAG:+-$BENCH_TAG}"
mkdir -p ops/bench/results
python3 - "$work/results" "ops/bench/results/api-$day.md" "$runs" "$duration" "$connections" <<'PY'
import platform, statistics, subprocess, sys, datetime
def sh(cmd):
    return subprocess.run(cmd, shell=True, capture_output=True, text=True).stdout.strip()
rows = {}
for line in open(sys.argv[1]):
    name, rps, p99, bad = line.split()
    rows.setdefault(name, []).append((float(rps), float(p99), int(bad)))
med = {name: (statistics.median(r for r, _, _ in v), statistics.median(p for _, p, _ in v), sum(b for _, _, b in v)) for name, v in rows.items()}
cpu = sh("lscpu | sed -n 's/^Model name: *//p'")
memory = sh("free -g | awk '/Mem:/{print $2}'")
swift = sh("swift --version 2>&1 | head -1")
postgres = sh("(postgres --version 2>/dev/null || /usr/lib/postgresql/15/bin/postgres --version)").split()[-1]
redis = sh("redis-server --version").split()[2][2:]
wrk = sh("wrk --version 2>&1 | head -1").split(" [")[0]
machine = f"{cpu}, {sh('nproc')} cores, {memory} GiB, {platform.system()} {platform.release()}, {swift}, PostgreSQL {postgres}, Redis {redis}, {wrk}"
hello = med["hello"][0]
lines = [f"# API benchmark, {datetime.date.today().isoformat()}", "", f"Machine: {machine}.",
         f"`ops/bench/api.sh`: wrk -t2 -c{sys.argv[5]} for {sys.argv[4]} s per figure on loopback, client and servers on the same 2 cores; "
         f"medians of {sys.argv[3]} runs, all in one run of the script; release builds.", "",
         "| endpoint | requests/s | p99 ms | vs hello world | target | non-2xx |", "| --- | --- | --- | --- | --- | --- |"]
names = {"hello": "Hummingbird hello world `GET /`", "meals": "authenticated `GET /meals` (20 of 50 meals, Postgres)",
         "logins": "enqueueing `POST /logins` (validation + one job into Redis)",
         "chat": "`POST /chat`, `Prefer: respond-async`, 8 pro users (counted, reserved, job accepted in Postgres, enqueued)",
         "hello_redis": "hello world + one `XADD` through the project's Redis client (no auth, no body)",
         "hello_post": "hello world as `POST /body` with `POST /logins`'s body, read whole (no auth, no parsing)",
         "hello_enqueue": "hello world as `POST /enqueue`: the body read, then `POST /logins`'s job enqueued (its payload and owner, so its `MULTI`…`EXEC`; no token, parsing, validation or envelope)",
         "hello_page": "hello world as `GET /page`: `GET /meals`'s statement through the Postgres client (pool of 8), rows not decoded (no token, no envelope)"}
names["meals_replica"] = "authenticated `GET /meals`, read from a streaming replica (`DATABASE_READ_URL`, `--replica`)"
for key in [k for k in ["hello", "meals", "meals_replica", "logins", "chat", "hello_redis", "hello_enqueue", "hello_post", "hello_page"] if k in med]:
    rps, p99, bad = med[key]
    ratio = rps / hello
    target = "" if key.startswith("hello") else ("≥ 50% ✓" if ratio >= 0.5 else "≥ 50% ✗")
    lines.append(f"| {names[key]} | {rps:,.0f} | {p99:.2f} | {ratio:.0%} | {target} | {bad} |")
if "pg_page" in med:
    page = med["pg_page"][0]
    ceiling = 1 / (1 / hello + 1 / page)
    lines += ["", f"Postgres alone, through pgbench -M prepared -c {sys.argv[5]} (no HTTP, no Swift): the statement of a page of 20 "
              f"meals with its account check, {page:,.0f}/s. A `GET /meals` needs the HTTP work of hello world plus that "
              f"statement on the same 2 cores, so even with everything else free it could reach at most "
              f"1 / (1/{hello:,.0f} + 1/{page:,.0f}) = {ceiling:,.0f} requests/s = {ceiling / hello:.0%} of hello world "
              f"({med['meals'][0] / ceiling:.0%} of that ceiling reached)."]
lines += ["", f"The enqueueing endpoint's floor: hello world's route plus one Redis command through this project's client, nothing "
          f"else (no token, no body, no validation), does {med['hello_redis'][0]:,.0f}/s = {med['hello_redis'][0] / hello:.0%} of hello world; "
          f"`POST /logins` reaches {med['logins'][0] / med['hello_redis'][0]:.0%} of that."]
if "hello_enqueue" in med and "hello_page" in med:
    lines += ["", "What this stack's own clients leave (issue 34, part 5): hello world plus only the work the endpoint cannot skip, "
              "through the project's Redis and Postgres clients (blocking C calls on their own threads, never on the "
              "cooperative pool or an event loop), nothing else:",
              f"- enqueueing `POST /logins`'s job (its record and stream entry in one transaction, not one `XADD`): {med['hello_enqueue'][0]:,.0f}/s; "
              f"`POST /logins` reaches {med['logins'][0] / med['hello_enqueue'][0]:.0%} of it;",
              f"- `GET /meals`'s statement, rows undecoded: {med['hello_page'][0]:,.0f}/s = {med['hello_page'][0] / ceiling:.0%} of the "
              f"ceiling above; `GET /meals` reaches {med['meals'][0] / med['hello_page'][0]:.0%} of it."]
import os
if "meals_replica" in med:
    lines += ["", f"`GET /meals` read from the replica / from the primary, same runs: {med['meals_replica'][0] / med['meals'][0]:.2f}× "
              f"({med['meals_replica'][0]:,.0f} vs {med['meals'][0]:,.0f}/s). Both servers, the replica, the primary, Redis and wrk "
              "share the machine's cores: the replica adds a Postgres of its own to feed, not a machine."]
if os.environ.get("BENCH_CARBSCAN_BIN"):
    lines += ["", f"The API served by `{os.environ['BENCH_CARBSCAN_BIN']}` (BENCH_CARBSCAN_BIN), not this checkout's build."]
lines += ["", "Per run:", ""] + [f"- {name}: " + ", ".join(f"{r:,.0f}/s" + ("" if name.startswith("pg_") else f" p99 {p:.2f} ms") for r, p, _ in v) for name, v in rows.items()]
open(sys.argv[2], "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
rm -rf "$work"
