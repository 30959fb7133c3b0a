# shellcheck shell=bash
# Sourced by the scripts that run the system or its tests (ops/run.sh, ops/test.sh, the benchmarks): from the repo
# root, load the shared steps (ops/lib.sh), install what is missing, and note which local services are not running
# yet (in `started`), so the caller stops only those.
# shellcheck source=ops/lib.sh
source ops/lib.sh

ops/install.sh

started=()
for service in redis postgres; do
    ops/services.sh running "$service" || started+=("$service")
done
