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

# A TCP port free on loopback now (the kernel's pick).
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# Starts a redis-server of the caller's own, without persistence, on a free port; logs to $1/redis.log. Sets
# `private_redis_port` and `private_redis_pid` (the caller kills it), returns once it answers.
start_private_redis() {
    private_redis_port=$(free_port)
    redis-server --bind 127.0.0.1 --port "$private_redis_port" --save "" --appendonly no >"$1/redis.log" 2>&1 &
    private_redis_pid=$!
    until redis-cli -p "$private_redis_port" ping >/dev/null 2>&1; do sleep 0.05; done
}
