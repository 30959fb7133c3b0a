#!/usr/bin/env bash
# Usage: ops/redis-script.sh NAME [KEY ...] , [ARG ...]   runs Sources/Queue/Scripts/NAME.lua alone with redis-cli --eval
#        ops/redis-script.sh --print NAME                 prints it as Redis runs it
# A line `-- @include FILE` stands for that file's text, each file once (as Scripts.source(of:) expands it in the
# engine). Runs against REDIS_URL (default: the local test Redis, redis://127.0.0.1:56379/0). Keys and arguments are
# each script's, in the order its header comment lists them; a queue's keys are `PREFIX:{QUEUE}:stream` and so on.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
dir=Sources/Queue/Scripts
print=false
if [[ ${1:-} == --print ]]; then print=true; shift; fi
(($# >= 1)) || { echo "usage: ops/redis-script.sh [--print] NAME [KEY ...] , [ARG ...]" >&2; exit 64; }
name=$1; shift
[[ -f $dir/$name.lua ]] || { echo "redis-script.sh: no script $dir/$name.lua" >&2; exit 64; }

declare -A included=()
expand() {
    [[ -z ${included[$1]:-} ]] || return 0
    included[$1]=1
    local line
    while IFS= read -r line || [[ -n $line ]]; do
        if [[ $line == "-- @include "* ]]; then expand "${line#-- @include }"; else printf '%s\n' "$line"; fi
    done <"$dir/$1"
}

if $print; then expand "$name.lua"; exit 0; fi
script=$(mktemp --suffix=.lua)
trap 'rm -f "$script"' EXIT
expand "$name.lua" >"$script"
redis-cli -u "${REDIS_URL:-redis://127.0.0.1:56379/0}" --eval "$script" "$@"
