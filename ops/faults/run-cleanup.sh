#!/usr/bin/env bash
# Usage: ops/faults/run-cleanup.sh [--binary PATH] — ops/run.sh stops everything it started, however a user runs and
# stops it: Ctrl-C with its output piped into `tail` (the pipe's reader dies first), Ctrl-C in a terminal (tmux) with
# `2>&1 | tee`, and under `timeout`. Each is the run.sh of this checkout, copied with the job files into a folder of its
# own (its own .local: Redis, Postgres) on free ports, running a copy of the binary so that its processes are known.
# Passes when, within 60 s of the stop, no process of that binary is left and the API, Redis and Postgres ports are
# free. Takes about 2 minutes.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
# shellcheck source=ops/prelude.sh
source ops/prelude.sh

binary=.build/debug/carbscan
while (($#)); do
    case $1 in
    --binary) binary=$2 && shift 2 ;;
    *) echo "usage: $0 [--binary PATH]" >&2 && exit 64 ;;
    esac
done
require_binary "$binary"

work=$(mktemp -d /var/tmp/carbscan-run-cleanup.XXXXXX)
root=$work/root
mkdir -p "$root" "$work/bin"
cp -r ops jobs "$root/"
# The copy's ops/install.sh finds the Python tools in this checkout's virtual environment (it would make its own).
mkdir -p "$root/.local"
ln -s "$venv" "$root/.local/venv"
cp "$binary" "$work/bin/carbscan"
chmod -R a+rX "$work"
api_port=$(free_port)
redis_port=$(free_port)
pg_port=$(free_port)
failed=0
tmux_socket=carbscan-run-cleanup-$$

finish() {
    tmux -L "$tmux_socket" kill-server 2>/dev/null || true
    pkill -KILL -f "$work/bin/carbscan (serve|schedule|work|migrate)" 2>/dev/null || true
    (cd "$root" && env -u REDIS_URL -u DATABASE_URL CARBSCAN_REDIS_PORT="$redis_port" CARBSCAN_PG_PORT="$pg_port" \
        ops/services.sh stop >/dev/null 2>&1) || true
    rm -rf "$work"
}
trap finish EXIT

# The command a user types (`$1 ops/run.sh $2`), in the copy, with its own ports (and no service URLs from this
# shell's environment).
run_command() {
    echo "cd $root && env -u REDIS_URL -u DATABASE_URL CARBSCAN_BIN=$work/bin/carbscan CARBSCAN_PORT=$api_port" \
        "CARBSCAN_REDIS_PORT=$redis_port CARBSCAN_PG_PORT=$pg_port CARBSCAN_WORKERS=1 CARBSCAN_PREFIX=runclean" \
        "$1 ops/run.sh $2"
}

up() {
    local deadline=$((SECONDS + 180))
    until curl -sf "http://127.0.0.1:$api_port/api/mobile/v1/health" >/dev/null 2>&1; do
        ((SECONDS < deadline)) || return 1
        sleep 0.5
    done
}

# Something accepts connections on 127.0.0.1:PORT.
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Everything run.sh started has ended: no process of the binary, nothing on the three ports.
check_stopped() {
    local scenario=$1 deadline=$((SECONDS + 60)) left
    while :; do
        left=""
        pgrep -f "$work/bin/carbscan (serve|schedule|work|migrate)" >/dev/null && left+=" carbscan processes"
        listening "$api_port" && left+=" API port"
        listening "$redis_port" && left+=" Redis"
        listening "$pg_port" && left+=" Postgres"
        [[ -z $left ]] && break
        if ((SECONDS >= deadline)); then
            echo "run-cleanup.sh: $scenario: FAIL, still running 60 s after the stop:$left" >&2
            pgrep -af "$work/bin/carbscan (serve|schedule|work)|redis-server.*$redis_port|postgres.*$pg_port" >&2 || true
            failed=1
            finish_leftovers
            return
        fi
        sleep 0.5
    done
    echo "run-cleanup.sh: $scenario: PASS, all stopped" >&2
}

finish_leftovers() {
    pkill -KILL -f "$work/bin/carbscan (serve|schedule|work|migrate)" 2>/dev/null || true
    (cd "$root" && env -u REDIS_URL -u DATABASE_URL CARBSCAN_REDIS_PORT="$redis_port" CARBSCAN_PG_PORT="$pg_port" \
        ops/services.sh stop >/dev/null 2>&1) || true
}

# Runs a command line as a terminal's foreground job would: in a process group of its own (the pid is its id), with
# SIGINT and SIGQUIT at their defaults. A script's `&` starts commands with both ignored, and a shell cannot trap a
# signal it started with ignored, so run.sh would never see the Ctrl-C; Python resets them before exec.
in_own_group() {
    exec python3 -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
signal.signal(signal.SIGQUIT, signal.SIG_DFL)
os.setsid()
os.execvp("bash", ["bash", "-c", sys.argv[1]])' "$1"
}

# 1. `ops/run.sh 2>&1 | tail`, then Ctrl-C: the terminal sends SIGINT to the whole foreground group, and tail dies
#    before run.sh's cleanup writes its first line.
in_own_group "$(run_command "" "2>&1 | tail -n 3")" >"$work/piped.out" 2>&1 &
leader=$!
if up; then
    kill -INT -- "-$leader"
    check_stopped "piped into tail, Ctrl-C"
else
    echo "run-cleanup.sh: piped: FAIL, the API did not come up" >&2 && cat "$work/piped.out" >&2 && failed=1 && finish_leftovers
fi
wait "$leader" 2>/dev/null || true

# 2. In a terminal: `ops/run.sh 2>&1 | tee run.log`, then Ctrl-C typed in it (tee dies with run.sh).
tmux -L "$tmux_socket" new-session -d -s run -x 200 -y 50
tmux -L "$tmux_socket" send-keys -t run "$(run_command "" "2>&1 | tee $work/tee.log")" Enter
if up; then
    tmux -L "$tmux_socket" send-keys -t run C-c
    check_stopped "in tmux with 2>&1 | tee, Ctrl-C"
else
    echo "run-cleanup.sh: tmux: FAIL, the API did not come up" >&2 && tmux -L "$tmux_socket" capture-pane -p -t run >&2 && failed=1
    finish_leftovers
fi
tmux -L "$tmux_socket" kill-server 2>/dev/null || true

# 3. `timeout 45 ops/run.sh 2>&1 | tail`: SIGTERM to run.sh alone when the time is up.
bash -c "$(run_command "timeout 45" "2>&1 | tail -n 3")" >"$work/timeout.out" 2>&1 &
timed=$!
if up; then
    wait "$timed" 2>/dev/null || true
    check_stopped "under timeout 45, piped into tail"
else
    echo "run-cleanup.sh: timeout: FAIL, the API did not come up" >&2 && cat "$work/timeout.out" >&2 && failed=1
    finish_leftovers
fi

((failed == 0)) && echo "run-cleanup.sh: all checks passed" >&2
exit "$failed"
