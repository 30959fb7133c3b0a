#!/usr/bin/env bash
# Usage: ops/faults/pooled-postgres.sh [--binary PATH] [--users N] [--seconds S]     (defaults: debug build, 30, 40)
# The whole system on Postgres past one server (issue 32), on the local services: `carbscan serve` and two
# `carbscan work` reach Postgres only through PgBouncer 1.18 in transaction pooling (ops/pgbouncer.sh, 10 server
# connections for the 40 the processes open), read from a streaming replica 2 s behind (ops/replica.sh), and migrate
# over a direct connection (DATABASE_MIGRATION_URL). Real work from N users for S seconds (soak/traffic.py: sign-ins,
# meal syncs, analyses and chats, sync and async, device registrations, with soak/model.py as the AI model and the
# login table). It fails unless: `carbscan migrate` through the pooler alone is refused naming DATABASE_MIGRATION_URL;
# no answer is a 5xx or missing; no process logged an error; every user who syncs a meal finds it in the next
# GET meals although the replica is behind (read-your-writes); and the replica served the other reads.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
# shellcheck source=ops/lib.sh
source ops/lib.sh
binary=.build/debug/carbscan users=30 seconds=40
while (($#)); do
    case $1 in
        --binary) binary=$2; shift 2 ;;
        --users) users=$2; shift 2 ;;
        --seconds) seconds=$2; shift 2 ;;
        *) echo "unknown argument $1" >&2; exit 64 ;;
    esac
done
require_binary "$binary"
binary=$(realpath "$binary")
for file in .local/env.sh .local/pgbouncer/env.sh .local/replica/env.sh; do
    [[ -f $file ]] || { echo "pooled-postgres.sh: $file missing: start ops/services.sh, ops/pgbouncer.sh, ops/replica.sh" >&2; exit 1; }
    # shellcheck source=/dev/null
    source "$file"
done
soak=$PWD/ops/bench/soak

dir=$(mktemp -d /var/tmp/carbscan-pooled-XXXX)
database=carbscan_pooled_$$
prefix=pooled-$$
api_port=$(free_port) model_port=$(free_port) metrics_port=$(free_port)
admin_url=${DATABASE_URL%/*}/postgres
direct_url=${DATABASE_URL%/*}/$database
pooled_url=${CARBSCAN_PGBOUNCER_URL%%/carbscan*}/$database?pooler=transaction
replica_url=${CARBSCAN_REPLICA_URL%/*}/$database
declare -A pid=()
cleanup() {
    for name in "${!pid[@]}"; do kill "${pid[$name]}" 2>/dev/null || true; done
    wait 2>/dev/null || true
    psql -q "$admin_url" -c "DROP DATABASE IF EXISTS $database WITH (FORCE)" >/dev/null 2>&1 || true
    redis-cli -u "$REDIS_URL" --scan --pattern "$prefix:*" | xargs -r -n 500 redis-cli -u "$REDIS_URL" DEL >/dev/null || true
    rm -rf "$dir"
}
trap cleanup EXIT
fail() {
    echo "pooled-postgres.sh: FAIL: $*" >&2
    for log in "$dir"/*.log; do echo "--- $log" >&2; tail -n 15 "$log" >&2; done
    exit 1
}
psql -q "$admin_url" -c "CREATE DATABASE $database" >/dev/null
# The replica replays the new database 2 s later; serve would start by logging it down.
for _ in $(seq 100); do psql -q "$replica_url" -c "SELECT 1" >/dev/null 2>&1 && break; sleep 0.1; done

export DATABASE_URL=$pooled_url REDIS_URL CARBSCAN_PREFIX=$prefix CARBSCAN_JOBS_DIR=$PWD/jobs LOG_LEVEL=warning
export JWT_SECRET=$(openssl rand -hex 32) BCRYPT_COST=4 LOGIN_MAX_ATTEMPTS_PER_IP=1000000 LOGIN_MAX_FAILURES=1000000
export AI_BASE_URL=http://127.0.0.1:$model_port AI_API_KEY=pooled-model-key
export LOGIN_WEBHOOK_URL=http://127.0.0.1:$model_port/rest/v1 LOGIN_WEBHOOK_API_KEY=pooled-login-key

# Migrations need the session the pooler does not keep: refused through it alone, applied over the direct URL.
if "$binary" migrate >"$dir/refused.out" 2>&1; then fail "carbscan migrate through the pooler alone was not refused"; fi
grep -q DATABASE_MIGRATION_URL "$dir/refused.out" || fail "the refusal does not name DATABASE_MIGRATION_URL: $(cat "$dir/refused.out")"
export DATABASE_MIGRATION_URL=$direct_url DATABASE_READ_URL=$replica_url
"$binary" migrate >/dev/null

python3 "$soak/model.py" "$model_port" "$dir" 2>"$dir/model.log" &
pid[model]=$!
"$binary" serve --port "$api_port" --metrics-port "$metrics_port" >"$dir/serve.log" 2>&1 &
pid[serve]=$!
base=http://127.0.0.1:$api_port/api/mobile/v1
for _ in $(seq 300); do curl -sf -o /dev/null "$base/health" && break; sleep 0.1; done
for n in 1 2; do
    "$binary" work --concurrency 10 >"$dir/work-$n.log" 2>&1 &
    pid[work-$n]=$!
done

python3 "$soak/traffic.py" "$base" "$dir" setup "$users" >"$dir/setup.out" 2>&1 || fail "sign-ups: $(tail -1 "$dir/setup.out")"
psql -q "$direct_url" -c "UPDATE users SET subscription_tier = 'pro', remaining_scans = 300, scan_reset_date = now() + interval '28 days'" >/dev/null
python3 "$soak/traffic.py" "$base" "$dir" run "$seconds" >"$dir/traffic.out" 2>&1 &
traffic=$!
python3 ops/faults/read_your_writes.py "$base" "$dir/users.json" >"$dir/ryw.out" 2>&1 || fail "read-your-writes: $(cat "$dir/ryw.out")"
wait "$traffic" || fail "traffic.py: $(tail -5 "$dir/traffic.out")"

echo "pooled-postgres.sh: answers by route and status: $(tail -1 "$dir/traffic.out" | sed 's/^traffic done: //')"
cat "$dir/ryw.out"
python3 - "$dir/traffic.json" <<'PY' || fail "answers"
import json, sys
answers = json.load(open(sys.argv[1]))["answers"]
bad = {route: {s: n for s, n in statuses.items() if s == "0" or int(s) >= 500} for route, statuses in answers.items()}
bad = {route: statuses for route, statuses in bad.items() if statuses}
total = sum(sum(statuses.values()) for statuses in answers.values())
print(f"pooled-postgres.sh: {total} answers, none 5xx or missing" if not bad else f"5xx or missing answers: {bad}")
sys.exit(1 if bad or total == 0 else 0)
PY
if grep -h -i -E '"level":"(error|critical)"|prepared statement|unsupported startup parameter' "$dir"/serve.log "$dir"/work-*.log >"$dir/errors.txt"; then
    fail "errors logged: $(head -5 "$dir/errors.txt")"
fi
metrics=$(curl -sf "http://127.0.0.1:$metrics_port/metrics")
replica_reads=$(awk '/^carbscan_postgres_reads_total\{.*target="replica"/ {s += $2} END {print s + 0}' <<<"$metrics")
((replica_reads > 0)) || fail "the replica served no read"
echo "pooled-postgres.sh: the replica served $replica_reads reads; PASS"
