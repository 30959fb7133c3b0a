#!/usr/bin/env bash
# Usage: ops/test.sh [swift test arguments, e.g. --filter QueueTests] — runs the tests against local Redis and Postgres;
# a whole run (no arguments) also lints the code (swift format lint --strict) first and fuzzes the API against its
# OpenAPI document (ops/contract.sh) after.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# shellcheck source=ops/prelude.sh
source ops/prelude.sh
stop_started() { ((${#started[@]} == 0)) || ops/services.sh stop "${started[@]}"; }
trap stop_started EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

ops/services.sh start
# shellcheck source=/dev/null
source .local/env.sh

if (($# == 0)); then
    # The repository's .swift-format, warnings as errors.
    swift format lint --strict --recursive Sources Tests
fi
swift build --build-tests
swift test --skip-build "$@"
if (($# == 0)); then
    bash ops/contract.sh
fi
