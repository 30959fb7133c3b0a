# shellcheck shell=bash
# The steps the ops/ scripts share, sourced by them (`source ops/lib.sh` from the repository root, or by path): swift
# on PATH, free ports, private Redis servers, release builds and their binaries, the Python tools' virtual environment.
# Sourcing it defines functions and variables and puts swift on PATH; it starts and installs nothing.

ops_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# Swift from /opt/swift when it is not on PATH. SwiftPM 6.3 passes package traits in random order and would
# recompile between builds without SWIFT_DETERMINISTIC_HASHING.
if ! command -v swift >/dev/null && [[ -x /opt/swift/usr/bin/swift ]]; then
    export PATH=/opt/swift/usr/bin:$PATH
fi
export SWIFT_DETERMINISTIC_HASHING=1

# A TCP port free on loopback now (the kernel's pick).
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# redis_up PORT DIR [redis-server options…]: a redis-server of the caller's own on 127.0.0.1:PORT, daemonized, without
# persistence unless the options say otherwise (later options win), working in DIR with DIR/redis.pid and
# DIR/redis.log; returns once it answers PING (fails after 10 s). `redis_down PORT` stops it (nothing saved).
redis_up() {
    local port=$1 dir=$2
    shift 2
    mkdir -p "$dir"
    redis-server --bind 127.0.0.1 --port "$port" --save "" --appendonly no --dir "$dir" --daemonize yes \
        --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" "$@" >/dev/null
    local deadline=$((SECONDS + 10))
    until [[ $(redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null) == PONG ]]; do
        ((SECONDS < deadline)) || return 1
        sleep 0.05
    done
}
redis_down() { redis-cli -h 127.0.0.1 -p "$1" shutdown nosave >/dev/null 2>&1 || true; }

# alive PID COMM: PID is a live process (not a zombie) whose command is COMM (guards against a reused PID).
alive() {
    local state
    state=$(ps -o stat=,comm= -p "$1" 2>/dev/null) || return 1
    [[ $state != Z* && ${state##* } == "$2" ]]
}

# start_private_redis DIR [redis-server options…]: redis_up on a free port. Sets `private_redis_port` and
# `private_redis_pid` (the caller stops it: kill, or redis_down).
start_private_redis() {
    private_redis_port=$(free_port)
    redis_up "$private_redis_port" "$@"
    private_redis_pid=$(cat "$1/redis.pid")
}

# as_pg COMMAND…: Postgres refuses to run as root: its tools run as the postgres user then (from /, which it can enter).
as_pg() { if [[ $(id -u) == 0 ]]; then (cd / && runuser -u postgres -- "$@"); else "$@"; fi; }

# pg_private_dir NAME: prints a folder for files a process running as the postgres user reads and writes:
# .local/NAME, or, when postgres cannot reach .local (a repo in a private folder such as a `mktemp -d` clone),
# /var/tmp/carbscan-NAME-<hash of the repo path>, with .local/NAME a symlink to it (made again if /var/tmp was emptied).
pg_private_dir() {
    local repo link target
    repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
    link=$repo/.local/$1
    if [[ -L $link || ! -e $link ]]; then
        mkdir -p "$repo/.local"
        if [[ ! -L $link ]] && as_pg test -x "$repo/.local"; then
            install -d -m 700 "$link"
            [[ $(id -u) != 0 ]] || chown postgres:postgres "$link"
        else
            target=/var/tmp/carbscan-$1-$(printf '%s' "$repo" | sha256sum | cut -c1-12)
            install -d -m 700 "$target"
            [[ $(id -u) != 0 ]] || chown postgres:postgres "$target"
            ln -sfn "$target" "$link"
        fi
    fi
    readlink -f "$link"
}

# apt_install_missing WHO PACKAGE…: installs those of the Debian packages that are missing (as root, or through sudo),
# saying so as WHO.
apt_install_missing() {
    local who=$1 package status missing=() sudo=()
    shift
    for package in "$@"; do
        status=$(dpkg-query -W -f='${db:Status-Status}' "$package" 2>/dev/null || true)
        [[ $status == installed ]] || missing+=("$package")
    done
    ((${#missing[@]})) || return 0
    echo "$who: installing ${missing[*]}" >&2
    [[ $(id -u) == 0 ]] || sudo=(sudo)
    "${sudo[@]}" apt-get update -q >&2
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
}

# release_build PRODUCT…: builds each product in release (swift build takes one --product at a time) and sets
# `bin_dir` to the folder of the binaries. Its output goes to stderr, so a script's stdout stays its results.
release_build() {
    local product
    for product in "$@"; do swift build -c release --product "$product" >&2; done
    bin_dir=$(swift build -c release --show-bin-path)
}

# require_binary PATH: stops the script (exit 69) unless PATH is an executable, naming the build that makes it.
require_binary() {
    [[ -x $1 ]] && return
    local build="swift build"
    [[ $1 == *release* ]] && build="swift build -c release --product $(basename "$1")"
    echo "$(basename "$0"): no $1: $build first (or --binary)" >&2
    exit 69
}

# The Python tools from PyPI (schemathesis, aiosmtpd, hypercorn, selenium, kubernetes-validate, PyYAML, matplotlib,
# opentelemetry-proto) live in a virtual environment of the checkout's own, never in the system's Python (PEP 668
# refuses that on Debian 12). Scripts run them as "$venv/bin/TOOL"; the standard library's scripts run with any python3.
venv=$ops_root/.local/venv

# python_tool MODULE SPEC: makes the virtual environment if needed and pip-installs SPEC into it unless MODULE
# imports there already.
python_tool() {
    if [[ ! -x $venv/bin/python3 ]]; then
        echo "ops: creating the Python tools' virtual environment in $venv" >&2
        python3 -m venv "$venv"
    fi
    "$venv/bin/python3" -c "import $1" 2>/dev/null && return
    echo "ops: installing $2 (PyPI) into $venv" >&2
    "$venv/bin/python3" -m pip install -q --disable-pip-version-check "$2"
}

# bench_meals_user BASE EMAIL: registers EMAIL through the API at BASE (…/api/mobile/v1) and syncs it 50 meals, made
# an hour ago (the free tier shows 7 days, so the page holds 20); its access token in `token`. The user of the
# benchmarks' `GET /meals`; `DATABASE_URL` is the API's database.
bench_meals_user() {
    local base=$1 email=$2 meals
    token=$(curl -sf "$base/auth/register" -H 'Content-Type: application/json' \
        -d "{\"email\":\"$email\",\"password\":\"bench password\"}" | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["accessToken"])')
    meals=$(python3 -c 'import json; print(json.dumps({"localMeals": [{"localId": f"m{i}", "name": f"Meal {i}", "carbEstimate": 10 + i, "createdAt": "2026-11-20T12:00:00Z"} for i in range(50)]}))')
    curl -sf -o /dev/null "$base/meals/sync" -H "Authorization: Bearer $token" -H 'Content-Type: application/json' -d "$meals"
    psql -q "$DATABASE_URL" -c "UPDATE meals SET created_at = now() - interval '1 hour' WHERE user_id = (SELECT id FROM users WHERE email = '$email')"
}

# bench_clear_jobs PREFIX: deletes the jobs a measured run enqueued under PREFIX on REDIS_URL (a cluster's every
# master): their records, and their streams' entries (the streams and their groups stay). Every run then meets a Redis
# of the same size: a run of an enqueueing endpoint leaves a job per request, some 80,000 for 10 s of POST /logins, and
# kept, they grew one day's Redis to 11 million keys and 10.9 GB and slowed every run after them.
bench_clear_jobs() {
    local node stream nodes
    nodes=$(redis-cli -u "$REDIS_URL" cluster nodes 2>/dev/null | awk '/master/ && !/fail/ { split($2, a, "@"); print "redis://" a[1] }')
    for node in ${nodes:-$REDIS_URL}; do
        redis-cli -u "$node" --scan --pattern "$1:*:job:*" | sed 's/^/UNLINK /' | redis-cli -u "$node" --pipe >/dev/null
        for stream in $(redis-cli -u "$node" --scan --pattern "$1:*:stream"); do
            redis-cli -u "$node" xtrim "$stream" maxlen 0 >/dev/null
        done
    done
}

# bench_logins_lua FILE: wrk's script for `POST /logins`, one sign-in webhook body, written to FILE.
bench_logins_lua() {
    cat >"$1" <<'LUA'
wrk.method = "POST"
wrk.body = '{"provider":"apple","provider_uid":"001.bench","email":null,"display_name":null,"client_timestamp":"2026-11-22T12:00:00Z"}'
wrk.headers["Content-Type"] = "application/json"
LUA
}
