#!/usr/bin/env bash
# Usage: ops/run.sh — builds and runs the whole system in the foreground: migrations, the API on
# CARBSCAN_HOST:CARBSCAN_PORT (127.0.0.1:8080), the scheduler and CARBSCAN_WORKERS=2 workers; Ctrl-C stops it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# shellcheck source=ops/prelude.sh
source ops/prelude.sh
pids=()

# At exit: SIGTERM to every process, wait for their graceful shutdown (SIGKILL after 40 s), then stop
# the services this run started.
# shellcheck disable=SC2329 # invoked by the EXIT trap (a false positive caused by the final `exit`)
cleanup() {
    trap '' INT TERM
    if ((${#pids[@]})); then
        echo "run.sh: stopping ${#pids[@]} processes" >&2
        kill -TERM "${pids[@]}" 2>/dev/null || true
        (sleep 40 && kill -KILL "${pids[@]}") >/dev/null 2>&1 &
        local watchdog=$!
        wait "${pids[@]}" 2>/dev/null || true
        kill "$watchdog" 2>/dev/null || true
    fi
    ((${#started[@]} == 0)) || ops/services.sh stop "${started[@]}"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

ops/services.sh start
# shellcheck source=/dev/null
source .local/env.sh

swift build -c release --product carbscan
carbscan="$(swift build -c release --show-bin-path)/carbscan"
mkdir -p .local/logs

# launch NAME ARGS...: runs `carbscan ARGS...` in the background, its output going to .local/logs/NAME.log and,
# prefixed with [NAME], to the terminal. setsid keeps the terminal's Ctrl-C away from it (it gets our SIGTERM
# instead); the log pipeline ignores both so that it outlives the process's graceful shutdown.
launch() {
    local name=$1
    shift
    setsid "$carbscan" "$@" > >(trap '' INT TERM && tee -a ".local/logs/$name.log" | sed -u "s/^/[$name] /") 2>&1 &
    pids+=($!)
}

# Migrations first (safe if several starters race: the migrator holds an advisory lock), then the API,
# the scheduler and the workers.
"$carbscan" migrate
launch api serve --host "${CARBSCAN_HOST:-127.0.0.1}" --port "${CARBSCAN_PORT:-8080}"
launch schedule schedule
for i in $(seq "${CARBSCAN_WORKERS:-2}"); do
    launch "work-$i" work
done
echo "run.sh: running ${#pids[@]} processes (logs in .local/logs/); Ctrl-C stops them" >&2

# The system runs until Ctrl-C, SIGTERM or any one process exiting, which brings the others down too.
status=0
wait -n "${pids[@]}" || status=$?
echo "run.sh: a process exited (status $status); stopping the rest" >&2
exit "$status"
