# shellcheck shell=bash
# Sourced by ops/run.sh, ops/test.sh and ops/bench/queue.sh: from the repo root, make swift reachable, install
# what is missing, and note which local services are not running yet (in `started`), so the caller stops only those.
if ! command -v swift >/dev/null && [[ -x /opt/swift/usr/bin/swift ]]; then
    export PATH=/opt/swift/usr/bin:$PATH
fi
# SwiftPM 6.3 passes package traits in random order and would recompile between builds without it.
export SWIFT_DETERMINISTIC_HASHING=1

ops/install.sh

started=()
for service in redis postgres; do
    ops/services.sh running "$service" || started+=("$service")
done
