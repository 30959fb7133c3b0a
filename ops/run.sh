#!/usr/bin/env bash
# Usage: ops/run.sh — builds and runs the whole system in the foreground: migrations, the API on
# CARBSCAN_HOST:CARBSCAN_PORT (127.0.0.1:8080), the scheduler and CARBSCAN_WORKERS=2 workers; Ctrl-C stops it.
# CARBSCAN_BIN=PATH runs that binary instead of building the release one.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# shellcheck source=ops/prelude.sh
source ops/prelude.sh
pids=()

# A message that may find its reader gone (`ops/run.sh | tail`, then Ctrl-C: the pipe's reader dies first).
say() { echo "run.sh: $*" >&2 2>/dev/null || true; }

# At exit: SIGTERM to every process, wait for their graceful shutdown (SIGKILL after 40 s), then stop
# the services this run started. Nothing may cut it short: SIGPIPE is ignored (a write to a dead pipe fails instead
# of killing the shell, as it did before the processes were signalled), the processes are signalled before anything
# is printed, and what services.sh prints goes on to the terminal while it is there and nowhere after.
# shellcheck disable=SC2329 # invoked by the EXIT trap (a false positive caused by the final `exit`)
cleanup() {
    trap '' INT TERM PIPE
    if ((${#pids[@]})); then
        kill -TERM "${pids[@]}" 2>/dev/null || true
        say "stopping ${#pids[@]} processes"
        (sleep 40 && kill -KILL "${pids[@]}") >/dev/null 2>&1 &
        local watchdog=$!
        wait "${pids[@]}" 2>/dev/null || true
        kill "$watchdog" 2>/dev/null || true
    fi
    if ((${#started[@]})); then
        ops/services.sh stop "${started[@]}" 2>&1 | { cat >&2 2>/dev/null || cat >/dev/null; } || true
    fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

ops/services.sh start
# shellcheck source=/dev/null
source .local/env.sh

if [[ -n ${CARBSCAN_BIN:-} ]]; then
    carbscan=$CARBSCAN_BIN
else
    release_build carbscan
    carbscan=$bin_dir/carbscan
fi
mkdir -p .local/logs

# launch NAME ARGS...: runs `carbscan ARGS...` in the background, its output going to .local/logs/NAME.log and,
# prefixed with [NAME], to the terminal. setsid keeps the terminal's Ctrl-C away from it (it gets our SIGTERM
# instead); the log pipeline ignores both so that it outlives the process's graceful shutdown, and SIGPIPE: when the
# terminal's reader is gone the log file still gets every line and the process is never killed by a write.
launch() {
    local name=$1
    shift
    setsid "$carbscan" "$@" > >(trap '' INT TERM PIPE && tee -p -a ".local/logs/$name.log" | sed -u "s/^/[$name] /") 2>&1 &
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
say "running ${#pids[@]} processes (logs in .local/logs/); Ctrl-C stops them"

# The system runs until Ctrl-C, SIGTERM or any one process exiting, which brings the others down too.
status=0
wait -n "${pids[@]}" || status=$?
say "a process exited (status $status); stopping the rest"
exit "$status"
