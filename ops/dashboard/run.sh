#!/usr/bin/env bash
# Usage: ops/dashboard/run.sh [--binary PATH] [--screenshots DIR] — the dashboard in a real browser: starts `carbscan serve` (with
# OPS_USER/OPS_PASSWORD) and `carbscan work` on the local services (ops/services.sh) in a database and key prefix of
# their own, enqueues real jobs (some succeed, some fail into retry and the dead set, one is delayed, one runs long),
# and runs ops/dashboard/browser_test.py: headless Chromium (Debian's chromium + chromium-driver) driven by Selenium
# (PyPI). Screenshots land in a scratch folder, or in DIR (`--screenshots ops/dashboard/screenshots` renews the
# committed ones). Without Chromium it says so and exits 0.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
# shellcheck source=ops/lib.sh
source ops/lib.sh
binary=.build/debug/carbscan
screenshots=""
while (($#)); do
    case $1 in
        --binary) binary=$2; shift 2 ;;
        --screenshots) screenshots=$2; shift 2 ;;
        *) echo "dashboard/run.sh: unknown argument $1" >&2; exit 64 ;;
    esac
done
require_binary "$binary"
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
    echo "dashboard/run.sh: SKIPPED: chromium and chromedriver are not installed (ops/install.sh installs them)"
    exit 0
fi
python_tool selenium 'selenium>=4.20,<5'
# shellcheck source=/dev/null
source .local/env.sh

work=$(mktemp -d)
database=carbscan_dashboard_$$
prefix=dashboard-$$
port=$(free_port)
admin_url=${DATABASE_URL%/*}/postgres
cleanup() {
    kill "${serve:-0}" "${worker:-0}" 2>/dev/null || true
    wait 2>/dev/null || true
    psql -q "$admin_url" -c "DROP DATABASE IF EXISTS $database" >/dev/null 2>&1 || true
    redis-cli -u "$REDIS_URL" --scan --pattern "$prefix:*" | xargs -r -n 500 redis-cli -u "$REDIS_URL" DEL >/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
psql -q "$admin_url" -c "CREATE DATABASE $database" >/dev/null

export DATABASE_URL=${DATABASE_URL%/*}/$database CARBSCAN_PREFIX=$prefix LOG_LEVEL=warning
export JWT_SECRET=$(openssl rand -hex 32) OPS_USER=operator OPS_PASSWORD=$(openssl rand -hex 12)
# Mail fails (nothing listens on port 9): email jobs wait in the retry set (backoff 10 s and up).
export SMTP_URL=smtp://127.0.0.1:9 MAIL_FROM=ops@example.com
"$binary" serve --port "$port" --migrate >"$work/serve.log" 2>&1 &
serve=$!
for _ in $(seq 300); do curl -sf -o /dev/null "http://127.0.0.1:$port/api/mobile/v1/health" && break; sleep 0.1; done
"$binary" work --concurrency 8 --heartbeat 1 >"$work/work.log" 2>&1 &
worker=$!

enqueue() { "$binary" jobs enqueue "$@"; }
enqueue noop --count 12 >/dev/null
enqueue noop --payload '{"fail":"permanent","result":{"apiKey":"sk-live-do-not-show"}}' --count 3 >"$work/dead.ids"
enqueue email --payload '{"to":"someone@example.com","subject":"Hello","text":"a sign-in link"}' --count 2 >"$work/retrying.ids"
enqueue noop --delay 3600 >"$work/scheduled.ids"
enqueue noop --payload '{"sleepMs":300000}' >"$work/running.ids"

"$venv/bin/python3" ops/dashboard/browser_test.py --base "http://127.0.0.1:$port" --user "$OPS_USER" --password "$OPS_PASSWORD" \
    --redis "$REDIS_URL" --prefix "$prefix" --work "$work" --screenshots "${screenshots:-$work/screenshots}" || {
    status=$?
    echo "dashboard/run.sh: the browser test failed; serve log:" >&2
    tail -20 "$work/serve.log" >&2
    exit "$status"
}
