#!/usr/bin/env bash
# Usage: ops/cluster.sh start|stop|status|env [--masters N] [--replicas R] — a project-local Redis Cluster on loopback in .local/cluster/
# N masters (default 3, at least 3) with R replicas each (default 0) on the consecutive ports CARBSCAN_CLUSTER_PORT
# (default 17001) .. +N*(1+R)-1, one node a directory .local/cluster/PORT/, without persistence. `start` does nothing
# when that cluster already runs and is healthy, and otherwise (re)creates it from empty nodes and waits until every
# node agrees on the slots; it writes the `env` lines (CARBSCAN_CLUSTER_URL, CARBSCAN_CLUSTER_PORTS) to
# .local/cluster/env.sh. `stop` and `status` act on every node under .local/cluster/, whatever the options say;
# `status` exits 1 when the cluster is not running or not healthy.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=ops/lib.sh
source "$root/ops/lib.sh"
cluster_dir=$root/.local/cluster
base_port=${CARBSCAN_CLUSTER_PORT:-17001}

log() { echo "cluster.sh: $*" >&2; }

usage() {
    sed -n '2s/^# //p' "${BASH_SOURCE[0]}" >&2
    exit 2
}

action=${1:-}
shift || true
masters=3
replicas=0
while (($#)); do
    case $1 in
        --masters | --replicas)
            if (($# < 2)) || [[ ! $2 =~ ^[0-9]+$ ]]; then usage; fi
            if [[ $1 == --masters ]]; then masters=$((10#$2)); else replicas=$((10#$2)); fi
            shift 2
            ;;
        *) usage ;;
    esac
done
[[ $base_port =~ ^[0-9]+$ ]] || { log "CARBSCAN_CLUSTER_PORT=$base_port is not a port number"; exit 2; }
# redis-cli --cluster create refuses fewer than 3 masters: 1 or 2 (without replicas, for benchmarks) are joined by hand.
((masters >= 3 || (masters >= 1 && replicas == 0))) || {
    log "fewer than 3 masters only without replicas (--masters $masters --replicas $replicas)"
    exit 2
}
nodes=$((masters * (1 + replicas)))
((base_port >= 1024 && base_port + nodes - 1 <= 65535)) || {
    log "ports $base_port..$((base_port + nodes - 1)) are not all in 1024..65535"
    exit 2
}
ports=()
for ((i = 0; i < nodes; i++)); do ports+=($((base_port + i))); done

# A node's cluster bus listens on PORT+10000 by default, which does not exist above 55535 (redis-server then refuses
# to start): there it is PORT-10000 instead.
bus_port() { if (($1 + 10000 <= 65535)); then echo $(($1 + 10000)); else echo $(($1 - 10000)); fi; }

# cli PORT COMMAND...: one command to a node, giving up after 5 s (a node that stopped answering must not hang us).
cli() {
    local port=$1
    shift
    timeout 5 redis-cli -h 127.0.0.1 -p "$port" "$@"
}

# Empty when there is no pid file (a node removes it when it shuts down).
node_pid() { cat "$cluster_dir/$1/redis.pid" 2>/dev/null || true; }

# The ports that have a directory under .local/cluster (running or not), in order.
known_ports() {
    local dir
    for dir in "$cluster_dir"/*/; do
        dir=${dir%/}
        dir=${dir##*/}
        if [[ $dir =~ ^[0-9]+$ ]]; then echo "$dir"; fi
    done | sort -n
}

running_ports() {
    local port
    for port in $(known_ports); do
        if alive "$(node_pid "$port")" redis-server; then echo "$port"; fi
    done
}

# cluster_info PORT FIELD: one field of a node's CLUSTER INFO.
cluster_info() { cli "$1" cluster info 2>/dev/null | tr -d '\r' | sed -n "s/^$2://p"; }

# consistent: every requested node says cluster_state:ok and that the cluster has the requested masters and nodes,
# and their CLUSTER SLOTS agree. Prints why not on stdout otherwise.
consistent() {
    local port info state
    for port in "${ports[@]}"; do
        info=$(cli "$port" cluster info 2>/dev/null | tr -d '\r') || { echo "$port does not answer"; return 1; }
        state=$(sed -n 's/^cluster_state://p' <<<"$info")
        [[ $state == ok ]] || { echo "$port: cluster_state:${state:-?}"; return 1; }
        [[ $(sed -n 's/^cluster_size://p' <<<"$info") == "$masters" ]] || { echo "$port: $(grep '^cluster_size:' <<<"$info")"; return 1; }
        [[ $(sed -n 's/^cluster_known_nodes://p' <<<"$info") == "$nodes" ]] || {
            echo "$port: $(grep '^cluster_known_nodes:' <<<"$info")"
            return 1
        }
    done
    # Every node's CLUSTER SLOTS, one JSON document a line, compared in one python3 (which takes longer to start than
    # all the redis-cli calls): a range, its master, its replicas sorted (nodes list them in the order they learnt of
    # them).
    for port in "${ports[@]}"; do
        cli "$port" --json cluster slots 2>/dev/null | tr -d '\n' || true
        echo
    done | python3 -c '
import json, sys
def fail(why):
    print(why)
    sys.exit(1)
views = []
for port, line in zip(sys.argv[1:], sys.stdin):
    try:
        reply = json.loads(line)
    except ValueError:
        fail(f"{port}: no CLUSTER SLOTS")
    addr = lambda node: f"{node[0]}:{node[1]}/{node[2]}"
    view = sorted((r[0], r[1], addr(r[2]), sorted(map(addr, r[3:]))) for r in reply)
    if views and view != views[0]:
        fail(f"{port}: CLUSTER SLOTS differs from {sys.argv[1]}\x27s")
    views.append(view)
if len(views) != len(sys.argv) - 1:
    fail("CLUSTER SLOTS missing")
' "${ports[@]}"
}

# The requested cluster is what runs, and nothing else of ours does, and it is healthy.
healthy() {
    [[ $(running_ports | tr '\n' ' ') == "${ports[*]} " ]] && consistent >/dev/null
}

logs_tails() {
    local port
    for port in $(known_ports); do
        log "--- $cluster_dir/$port/redis.log (last 15 lines)"
        tail -n 15 "$cluster_dir/$port/redis.log" >&2 2>/dev/null || true
    done
}

# Stops every node under .local/cluster: SHUTDOWN NOSAVE NOW to all at once (NOW: a master does not wait for its
# replicas), then waits until they are gone; SIGKILL after 10 s.
stop_all() {
    local port pid pids=() waiting=() entry deadline=$((SECONDS + 10)) killed=false
    for port in $(running_ports); do
        pid=$(node_pid "$port")
        pids+=("$port:$pid")
        cli "$port" shutdown nosave now >/dev/null 2>&1 &
    done
    ((${#pids[@]})) || { log "not running"; return 0; }
    while true; do
        waiting=()
        for entry in "${pids[@]}"; do
            if alive "${entry#*:}" redis-server; then waiting+=("$entry"); fi
        done
        ((${#waiting[@]})) || break
        if ((SECONDS >= deadline)); then
            $killed && { log "could not stop ${waiting[*]%%:*}"; exit 1; }
            log "still running after 10 s: ${waiting[*]%%:*}; killing them"
            for entry in "${waiting[@]}"; do kill -KILL "${entry#*:}" 2>/dev/null || true; done
            killed=true
            deadline=$((SECONDS + 5))
        fi
        sleep 0.05
    done
    wait
    log "stopped ${#pids[@]} nodes (ports ${pids[*]%%:*})"
}

# taken_ports PORT...: those a node could not listen on at 127.0.0.1 (bound as Redis binds, with SO_REUSEADDR):
# another listener's, or the local end of some connection's. Ports in the kernel's ephemeral range
# (/proc/sys/net/ipv4/ip_local_port_range, 32768-60999 by default) are given to clients' outgoing connections, and
# under a busy test suite one of them may hold a node's port for a while: the default base, 17001 (bus 27001), is
# below it.
taken_ports() {
    python3 -c '
import socket, sys
for port in map(int, sys.argv[1:]):
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            print(port)' "$@"
}

# The start failed: the nodes' logs, and no node left running (their directories stay, logs and all).
start_failed() {
    logs_tails
    stop_all
    exit 1
}

start_nodes() {
    local port dir taken
    # Only the nodes' own directories: env.sh and the lock stay.
    for port in $(known_ports); do rm -rf "${cluster_dir:?}/$port"; done
    rm -f "$cluster_dir/create.log"
    local wanted=()
    for port in "${ports[@]}"; do wanted+=("$port" "$(bus_port "$port")"); done
    taken=$(taken_ports "${wanted[@]}" | paste -sd ' ' -)
    if [[ -n $taken ]]; then
        log "ports in use (by a listener, or as the local end of a connection): $taken"
        log "the nodes need ${ports[*]} and their cluster bus ports (each $(bus_port "${ports[0]}") - ${ports[0]} away); see ss -tanp"
        exit 1
    fi
    for port in "${ports[@]}"; do
        dir=$cluster_dir/$port
        mkdir -p "$dir"
        redis-server --bind 127.0.0.1 --port "$port" --cluster-port "$(bus_port "$port")" --protected-mode no \
            --cluster-enabled yes --cluster-config-file "$dir/nodes.conf" --cluster-node-timeout 2000 \
            --save "" --appendonly no --dir "$dir" --daemonize yes --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" \
            9>&- # not the lock: the node would hold it for its whole life
    done
    local waiting=("${ports[@]}") still deadline=$((SECONDS + 10))
    while true; do
        still=()
        for port in "${waiting[@]}"; do
            # Redis ends the line of a fatal start-up error (a port taken meanwhile, say) with "aborting".
            if grep -qs 'aborting' "$cluster_dir/$port/redis.log"; then
                log "node $port could not start"
                start_failed
            fi
            if [[ $(cli "$port" ping 2>/dev/null) != PONG ]] || ! alive "$(node_pid "$port")" redis-server; then
                still+=("$port")
            fi
        done
        waiting=("${still[@]}")
        ((${#waiting[@]})) || return 0
        if ((SECONDS >= deadline)); then
            log "no PONG after 10 s from ports ${waiting[*]}"
            start_failed
        fi
        sleep 0.05
    done
}

# assign_slots: what `redis-cli --cluster create` does for 1 or 2 masters (which it refuses): an equal range of the
# 16,384 slots each, then every node meets the first.
assign_slots() {
    local i start end
    for ((i = 0; i < masters; i++)); do
        start=$((i * 16384 / masters))
        end=$(((i + 1) * 16384 / masters - 1))
        cli "${ports[$i]}" cluster addslotsrange "$start" "$end" >>"$cluster_dir/create.log"
        ((i == 0)) || cli "${ports[$i]}" cluster meet 127.0.0.1 "${ports[0]}" "$(bus_port "${ports[0]}")" >>"$cluster_dir/create.log"
    done
}

create_cluster() {
    local addresses=() port
    for port in "${ports[@]}"; do addresses+=("127.0.0.1:$port"); done
    if ((masters < 3)); then
        assign_slots
    elif ! redis-cli --cluster create "${addresses[@]}" --cluster-replicas "$replicas" --cluster-yes \
        </dev/null >"$cluster_dir/create.log" 2>&1; then
        log "redis-cli --cluster create failed:"
        cat "$cluster_dir/create.log" >&2
        start_failed
    fi
    local why='' deadline=$((SECONDS + 30))
    until why=$(consistent); do
        if ((SECONDS >= deadline)); then
            log "the cluster is not consistent after 30 s ($why); redis-cli --cluster create said:"
            cat "$cluster_dir/create.log" >&2
            start_failed
        fi
        sleep 0.1
    done
}

env_lines() {
    # Digits and punctuation only: nothing to escape.
    echo "export CARBSCAN_CLUSTER_URL=redis://127.0.0.1:$base_port"
    echo "export CARBSCAN_CLUSTER_PORTS=\"${ports[*]}\""
}

# Start and stop hold a lock, so that two runs (say, two test scripts) do not create the cluster over each other.
lock() {
    mkdir -p "$cluster_dir"
    exec 9>"$cluster_dir/lock"
    flock -w 120 9 || { log "another ops/cluster.sh has held $cluster_dir/lock for 2 minutes"; exit 1; }
}

status() {
    local running port pid nodes_reply self id role master master_address slots state code=0
    running=$(running_ports)
    if [[ -z $running ]]; then
        echo "cluster: stopped"
        return 1
    fi
    for port in $(known_ports); do
        pid=$(node_pid "$port")
        if ! alive "$pid" redis-server; then
            echo "$port: not running"
            code=1
            continue
        fi
        if ! nodes_reply=$(cli "$port" cluster nodes 2>/dev/null | tr -d '\r') || [[ -z $nodes_reply ]]; then
            echo "$port: pid $pid, not answering"
            code=1
            continue
        fi
        state=$(cluster_info "$port" cluster_state)
        [[ $state == ok ]] || code=1
        # id address flags master-id ping pong epoch link slot...
        self=$(grep -m 1 ' myself,' <<<"$nodes_reply")
        read -r id _ role master _ _ _ _ slots <<<"$self"
        slots=$(tr ' ' '\n' <<<"$slots" | grep -v '^\[' | paste -sd, -)
        if [[ $role == *slave* ]]; then
            # A replica shows its master's port and the slots it replicates.
            read -r _ master_address _ _ _ _ _ _ slots <<<"$(grep -m 1 "^$master " <<<"$nodes_reply")"
            slots=$(tr ' ' '\n' <<<"$slots" | grep -v '^\[' | paste -sd, -)
            master_address=${master_address%@*}
            echo "$port: replica of ${master_address##*:}, slots ${slots:-none}, cluster_state:$state (pid $pid, id ${id:0:8})"
        else
            echo "$port: master, slots ${slots:-none}, cluster_state:$state (pid $pid, id ${id:0:8})"
        fi
    done
    return "$code"
}

case $action in
    start)
        if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then "$root/ops/install.sh"; fi
        lock
        if healthy; then
            log "already running: $masters masters, $replicas replicas each (ports ${ports[*]})"
        else
            if [[ -n $(running_ports) ]]; then
                log "a cluster runs that is not the one asked for ($masters masters, $replicas replicas each, ports ${ports[*]}) or not healthy: recreating it"
                stop_all
            fi
            start_nodes
            create_cluster
            log "started: $masters masters, $replicas replicas each (ports ${ports[*]})"
        fi
        env_lines >"$cluster_dir/env.sh"
        ;;
    stop)
        lock
        stop_all
        ;;
    status) status ;;
    env) env_lines ;;
    *) usage ;;
esac
