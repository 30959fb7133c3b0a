#!/usr/bin/env bash
# Usage: ops/test.sh [swift test arguments, e.g. --filter QueueTests] — runs the tests against local Redis and Postgres.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if ! command -v swift >/dev/null && [[ -x /opt/swift/usr/bin/swift ]]; then
    export PATH=/opt/swift/usr/bin:$PATH
fi

ops/install.sh

# Stop at exit only the services this run started, so a developer's running ones survive.
started=()
for service in redis postgres; do
    ops/services.sh running "$service" || started+=("$service")
done
stop_started() { ((${#started[@]} == 0)) || ops/services.sh stop "${started[@]}"; }
trap stop_started EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

ops/services.sh start
# shellcheck source=/dev/null
source .local/env.sh
# SwiftPM 6.3 passes package traits in random order and would recompile between build and test without it.
export SWIFT_DETERMINISTIC_HASHING=1

swift build --build-tests
swift test --skip-build "$@"
