#!/usr/bin/env bash
# Usage: ops/contract.sh [--binary PATH] [--examples N] [schemathesis run options…]
# The API against its own OpenAPI document: schemathesis (PyPI) fuzzes every operation of a real `carbscan serve`
# (N examples each, default 25, then stateful sequences along the document's links) with every check: no 5xx, every
# answer as the document describes it, every request the document forbids refused, every request it allows
# accepted. Runs on the local services (ops/services.sh) in a database and key prefix of its own; the fuzzer's
# requests are signed in as accounts it registers through the API (ops/contract/hooks.py).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=ops/lib.sh
source ops/lib.sh
binary=.build/debug/carbscan examples=25
while (($#)); do
    case $1 in
        --binary) binary=$2; shift 2 ;;
        --examples) examples=$2; shift 2 ;;
        *) break ;;
    esac
done
require_binary "$binary"
python_tool schemathesis 'schemathesis>=4.32,<5'
# shellcheck source=/dev/null
source .local/env.sh

work=$(mktemp -d)
database=carbscan_contract_$$
prefix=contract-$$
api_port=$(free_port) jwks_port=$(free_port)
admin_url=${DATABASE_URL%/*}/postgres
cleanup() {
    kill "${serve:-0}" "${worker:-0}" "${jwks:-0}" 2>/dev/null || true
    wait 2>/dev/null || true
    psql -q "$admin_url" -c "DROP DATABASE IF EXISTS $database" >/dev/null 2>&1 || true
    redis-cli -u "$REDIS_URL" --scan --pattern "$prefix:*" | xargs -r -n 500 redis-cli -u "$REDIS_URL" DEL >/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
psql -q "$admin_url" -c "CREATE DATABASE $database" >/dev/null

# Apple's keys, served locally: an empty set, so every fuzzed identity token is refused as unsigned by Apple.
mkdir "$work/jwks" && echo '{"keys":[]}' >"$work/jwks/keys"
python3 -m http.server "$jwks_port" --bind 127.0.0.1 --directory "$work/jwks" >/dev/null 2>&1 &
jwks=$!

# Every provider configured (an unconfigured one answers 503 by design); rate limits out of the fuzzer's way.
# A worker runs the default queue (device registrations answer when their job has run); the other queues' jobs stay
# queued, and POST analyze, chat and subscriptions/sync answer 202 at once.
export DATABASE_URL=${DATABASE_URL%/*}/$database CARBSCAN_PREFIX=$prefix LOG_LEVEL=warning SYNC_WAIT_SECONDS=0 EVENT_STREAM_MAX_SECONDS=1
export JWT_SECRET=$(openssl rand -hex 32) BCRYPT_COST=4 SESSION_CACHE_SECONDS=0
export LOGIN_MAX_FAILURES=1000000 LOGIN_MAX_ATTEMPTS_PER_IP=1000000 MAGIC_LINK_MAX_PER_EMAIL=1000000 MAGIC_LINK_MAX_PER_IP=1000000
export APPLE_CLIENT_ID=com.carbscan.app APPLE_JWKS_URL=http://127.0.0.1:$jwks_port/keys
export STRIPE_WEBHOOK_SECRET=whsec_contract STRIPE_SECRET_KEY=sk_test_contract STRIPE_API_BASE=http://127.0.0.1:9
export APPSTORE_BUNDLE_ID=com.carbscan.app APPSTORE_PRODUCT_TIERS=com.carbscan.pro.monthly=pro
export SMTP_URL=smtp://127.0.0.1:9 LOGIN_WEBHOOK_URL=http://127.0.0.1:9
"$binary" serve --port "$api_port" --migrate >"$work/serve.log" 2>&1 &
serve=$!
base=http://127.0.0.1:$api_port
for _ in $(seq 300); do curl -sf -o /dev/null "$base/api/mobile/v1/health" && break; sleep 0.1; done
"$binary" work --queues default --concurrency 10 >"$work/work.log" 2>&1 &
worker=$!

export CONTRACT_BASE_URL=$base CONTRACT_FILTERED_LOG=$work/filtered.txt SCHEMATHESIS_HOOKS=hooks PYTHONPATH=ops/contract${PYTHONPATH:+:$PYTHONPATH}
status=0
"$venv/bin/st" --config-file ops/contract/schemathesis.toml run "$base/api/mobile/v1/openapi.json" --url "$base" \
    --checks all --max-examples "$examples" --seed 1 --workers 1 --no-color \
    --generation-database none --generation-allow-x00 false --request-timeout 10 "$@" || status=$?
if [[ -s $work/filtered.txt ]]; then
    echo "contract.sh: schema-valid requests refused for a rule no schema states (not failures):"
    sort "$work/filtered.txt" | uniq -c
fi
if ((status != 0)); then
    echo "contract.sh: schemathesis failed (exit $status); the server's log:" >&2
    tail -n 40 "$work/serve.log" >&2
fi
exit "$status"
