#!/usr/bin/env bash
# Scan-reset benchmark: the scan-reset job's batched reset of 1,000,000 due users against one bare UPDATE of the
# same rows (target: at most 2× the bare UPDATE), plus the longest single batch, i.e. the longest any row is locked.
#   ops/bench/scan-reset.sh [--runs N] [--users N]      (defaults 3, 1000000; figures are medians)
# Works in a scratch database (carbscan_bench_scan_reset, dropped afterwards). The batched figure is the real
# handler, run by a real `carbscan work` from a job enqueued with `carbscan jobs enqueue` (its result reports the
# handler's own elapsed time and longest batch); the bare UPDATE is timed by psql. Before each measurement the
# users are made due again and the table is vacuumed, so both start from the same state.
# Writes ops/bench/results/scan-reset-<date>.md with the machine's description.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
runs=3 users=1000000
while (($#)); do
    case $1 in
        --runs) runs=$2; shift 2 ;;
        --users) users=$2; shift 2 ;;
        *) echo "usage: ops/bench/scan-reset.sh [--runs N] [--users N]" >&2; exit 64 ;;
    esac
done

# shellcheck source=ops/prelude.sh
source ops/prelude.sh
pids=()
cleanup() {
    ((${#pids[@]} == 0)) || kill "${pids[@]}" 2>/dev/null || true
    [[ -z ${admin_url:-} ]] || psql "$admin_url" -qc "DROP DATABASE IF EXISTS carbscan_bench_scan_reset" 2>/dev/null || true
    ((${#started[@]} == 0)) || ops/services.sh stop "${started[@]}"
}
trap cleanup EXIT
ops/services.sh start
# shellcheck source=/dev/null
source .local/env.sh

release_build carbscan
bin=$bin_dir/carbscan
work=$(mktemp -d)
admin_url=$DATABASE_URL
psql "$admin_url" -qc "DROP DATABASE IF EXISTS carbscan_bench_scan_reset" -c "CREATE DATABASE carbscan_bench_scan_reset"
export DATABASE_URL="${admin_url%/*}/carbscan_bench_scan_reset" CARBSCAN_PREFIX=carbscan-bench-scan-reset LOG_LEVEL=warning
"$bin" migrate >/dev/null
echo "scan-reset bench: creating $users users" >&2
psql "$DATABASE_URL" -qc "INSERT INTO users (id, subscription_tier, remaining_scans, scan_reset_date)
    SELECT gen_random_uuid()::text, 'free', 0, '2030-01-02T00:00:00Z' FROM generate_series(1, $users)"
"$bin" work --queues maintenance --concurrency 1 >"$work/worker.log" 2>&1 &
pids+=($!)

# Every user used up and due at the start of 2030-01-02 (UTC), the table vacuumed.
make_due() {
    psql "$DATABASE_URL" -qc "UPDATE users SET remaining_scans = 0, scan_reset_date = '2030-01-02T00:00:00Z'" -c "VACUUM ANALYZE users"
}

for run in $(seq "$runs"); do
    echo "scan-reset bench: run $run of $runs" >&2
    make_due
    id=$("$bin" jobs enqueue scan-reset --payload '{"scope":"daily","period":"2030-01-02"}' | tail -1)
    for _ in $(seq 1200); do
        "$bin" jobs show "$id" --json >"$work/job.json" 2>/dev/null || true
        python3 -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1])).get("status") in ("succeeded","failed") else 1)' \
            "$work/job.json" 2>/dev/null && break
        sleep 0.5
    done
    python3 - "$work/job.json" "$users" >>"$work/results" <<'PY'
import json, sys
job = json.load(open(sys.argv[1]))
assert job["status"] == "succeeded", job
result = json.loads(job["result"])
assert result["usersReset"] == int(sys.argv[2]), result
print("batched", result["elapsedMs"], result["longestBatchMs"], result["batches"])
PY
    make_due
    { echo '\timing on'; echo "UPDATE users SET remaining_scans = 3, scan_reset_date = '2030-01-03T00:00:00Z', updated_at = now()
        WHERE subscription_tier = 'free' AND scan_reset_date <= '2030-01-02T00:00:00Z';"; } | psql "$DATABASE_URL" -q >"$work/bare.txt"
    python3 - "$work/bare.txt" >>"$work/results" <<'PY'
import re, sys
ms = float(re.search(r"Time: ([\d.]+) ms", open(sys.argv[1]).read()).group(1))
print("bare", ms, ms, 1)
PY
done
redis-cli -u "$REDIS_URL" --scan --pattern 'carbscan-bench-scan-reset:*' | xargs -r -n 500 redis-cli -u "$REDIS_URL" unlink >/dev/null

day="$(date -u +%F)"
mkdir -p ops/bench/results
python3 - "$work/results" "ops/bench/results/scan-reset-$day.md" "$runs" "$users" <<'PY'
import platform, statistics, subprocess, sys, datetime
def sh(cmd):
    return subprocess.run(cmd, shell=True, capture_output=True, text=True).stdout.strip()
rows = {}
for line in open(sys.argv[1]):
    name, total, longest, batches = line.split()
    rows.setdefault(name, []).append((float(total), float(longest), int(batches)))
med = {name: (statistics.median(t for t, _, _ in v), statistics.median(l for _, l, _ in v), v[0][2]) for name, v in rows.items()}
cpu = sh("lscpu | sed -n 's/^Model name: *//p'")
memory = sh("free -g | awk '/Mem:/{print $2}'")
swift = sh("swift --version 2>&1 | head -1")
postgres = sh("psql \"$DATABASE_URL\" -Atc 'SHOW server_version'")
machine = f"{cpu}, {sh('nproc')} cores, {memory} GiB, {platform.system()} {platform.release()}, {swift}, PostgreSQL {postgres}"
users = int(sys.argv[4])
batched, bare = med["batched"], med["bare"]
ratio = batched[0] / bare[0]
lines = [f"# Scan-reset benchmark, {datetime.date.today().isoformat()}", "", f"Machine: {machine}.",
         f"`ops/bench/scan-reset.sh`: {users:,} due free-tier users (random UUID ids), reset by the scan-reset job in a release "
         f"`carbscan work` (batches of 5,000, each its own statement and transaction) and by one bare `UPDATE` of the same rows "
         f"and columns; each measurement starts from the same vacuumed table; medians of {sys.argv[3]} runs.", "",
         "| reset | total s | users/s | longest batch (lock hold) ms | batches | vs bare UPDATE | target |",
         "| --- | --- | --- | --- | --- | --- | --- |",
         f"| one bare `UPDATE` | {bare[0] / 1000:.2f} | {users / bare[0] * 1000:,.0f} | {bare[1]:,.0f} (every row, whole statement) | 1 | 1.00× | |",
         f"| scan-reset job, batched | {batched[0] / 1000:.2f} | {users / batched[0] * 1000:,.0f} | {batched[1]:,.1f} | {batched[2]} | "
         f"{ratio:.2f}× | ≤ 2× {'✓' if ratio <= 2 else '✗'} |",
         "", "Per run (total ms / longest batch ms):", ""]
lines += [f"- {name}: " + ", ".join(f"{t:,.0f} / {l:,.1f}" for t, l, _ in v) for name, v in rows.items()]
open(sys.argv[2], "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
rm -rf "$work"
