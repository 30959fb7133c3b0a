#!/usr/bin/env bash
# Usage: ops/faults/hosts.sh [--binary PATH] [--jobs N] [--deploy-jobs N]
# Workers on several "hosts" (issue 16 §3): network namespaces on this machine joined by a bridge (10.77.0.0/24), a
# Redis Cluster of three masters and their three replicas, each node in a namespace of its own (cs-r1..cs-r6,
# 10.77.0.11-16, port 6379), two worker hosts (cs-w1, cs-w2, 10.77.0.21-22) running `carbscan work`, two scheduler
# hosts (cs-s1, cs-s2, 10.77.0.31-32) running `carbscan schedule`, and the producer and the checks in the root
# namespace. noop jobs (visibility timeout 5 s, 200 ms of work each) record their id in a
# Redis list when they finish, so a job run twice shows up twice. Five checks:
#   1. kill host (--jobs, default 2000): every process of cs-w1 is killed (-9) mid-run; every job must finish, runs beyond the jobs in flight
#      on the dead host = 0.
#   2. cut host (--jobs): cs-w1's link goes down for 12 s (over two leases) and comes back; its jobs are re-run on cs-w2, and its
#      late acknowledgements must not count: every job succeeded once in the counts, none failed or dead.
#   3. rolling deploy (--deploy-jobs, default 20,000): 4 workers (2 per host) are each replaced in turn (SIGTERM, wait,
#      start a new one) while the jobs flow: zero failed, zero lost, zero run twice.
#   4. master failover (--jobs, 1 s each): the jobs enqueued durably (CARBSCAN_DURABLE_ENQUEUE=1), the host of the queue's master is
#      killed (-9) mid-run; its replica takes over (node timeout 2 s) and the workers follow it: every job finishes, runs
#      beyond the jobs in flight = 0. Prints how long the queue was unserved.
#   5. schedulers: two `carbscan schedule` on cs-s1 and cs-s2 with a schedule firing every minute; after one minute
#      boundary exactly 1 job is enqueued; cs-s1 is killed (-9); after the next exactly 2. Takes about two minutes.
# Needs root and `ip netns`; where the machine forbids them it says so and exits 0 (skipped).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
# shellcheck source=ops/lib.sh
source ops/lib.sh
binary=.build/release/carbscan
jobs=2000
deploy_jobs=20000
while (($#)); do
    case $1 in
        --binary) binary=$2; shift 2 ;;
        --jobs) jobs=$2; shift 2 ;;
        --deploy-jobs) deploy_jobs=$2; shift 2 ;;
        *) echo "unknown argument $1" >&2; exit 64 ;;
    esac
done
require_binary "$binary"
binary=$(readlink -f "$binary")
log() { echo "hosts.sh: $*" >&2; }

if [[ $(id -u) != 0 ]] || ! ip netns add cs-probe 2>/dev/null; then
    log "skipped: network namespaces need root and 'ip netns' (not allowed here)"
    exit 0
fi
ip netns del cs-probe

dir=$(mktemp -d /var/tmp/carbscan-hosts-XXXX)
redis_hosts=(r1 r2 r3 r4 r5 r6)
hosts=("${redis_hosts[@]}" w1 w2 s1 s2)
declare -A address=([r1]=10.77.0.11 [r2]=10.77.0.12 [r3]=10.77.0.13 [r4]=10.77.0.14 [r5]=10.77.0.15 [r6]=10.77.0.16
    [w1]=10.77.0.21 [w2]=10.77.0.22 [s1]=10.77.0.31 [s2]=10.77.0.32)
cleanup() {
    for host in "${hosts[@]}"; do
        mapfile -t pids < <(ip netns pids "cs-$host" 2>/dev/null || true)
        ((${#pids[@]} == 0)) || kill -9 "${pids[@]}" 2>/dev/null || true
        ip netns del "cs-$host" 2>/dev/null || true
        ip link del "cs-$host" 2>/dev/null || true
    done
    ip link del csbr0 2>/dev/null || true
    rm -rf "$dir"
}
trap cleanup EXIT
cleanup
mkdir -p "$dir"

# The network: a bridge in the root namespace, a veth pair per host (cs-HOST here, eth0 there).
ip link add csbr0 type bridge
ip addr add 10.77.0.1/24 dev csbr0
ip link set csbr0 up
for host in "${hosts[@]}"; do
    ip netns add "cs-$host"
    ip link add "cs-$host" type veth peer name eth0 netns "cs-$host"
    ip link set "cs-$host" master csbr0 up
    ip -n "cs-$host" addr add "${address[$host]}/24" dev eth0
    ip -n "cs-$host" link set eth0 up
    ip -n "cs-$host" link set lo up
done
on() { local host=$1; shift; ip netns exec "cs-$host" "$@"; }
# spawn HOST COMMAND… &: as `on`, for a background process whose pid ($!) must be the command's own. Through `on`, $!
# was the pid of the subshell running the function, so a SIGTERM to it left the command running.
spawn() { local host=$1; shift; exec ip netns exec "cs-$host" "$@"; }

# The cluster: one node per namespace, three masters with a replica each.
for host in "${redis_hosts[@]}"; do
    mkdir -p "$dir/$host"
    on "$host" redis-server --bind "${address[$host]}" --port 6379 --cluster-enabled yes --cluster-node-timeout 2000 \
        --cluster-config-file "$dir/$host/nodes.conf" --save "" --appendonly no --dir "$dir/$host" --daemonize yes \
        --logfile "$dir/$host/redis.log" --protected-mode no
done
for host in "${redis_hosts[@]}"; do until redis-cli -h "${address[$host]}" ping >/dev/null 2>&1; do sleep 0.05; done; done
redis-cli --cluster create $(for host in "${redis_hosts[@]}"; do echo "${address[$host]}:6379"; done) --cluster-replicas 1 \
    --cluster-yes >"$dir/create.log" 2>&1
cluster_ok() { # every node still up says cluster_state:ok and its replicas are linked
    local host
    for host in "${redis_hosts[@]}"; do
        [[ -n $(ip netns pids "cs-$host" 2>/dev/null) ]] || continue
        [[ $(redis-cli -h "${address[$host]}" cluster info | tr -d '\r' | grep cluster_state) == cluster_state:ok ]] || return 1
        redis-cli -h "${address[$host]}" info replication | tr -d '\r' | grep -qE '^(master_link_status:up|connected_slaves:[1-9])' || return 1
    done
}
until cluster_ok; do sleep 0.1; done
export REDIS_URL=redis://10.77.0.11:6379,10.77.0.12:6379 CARBSCAN_PREFIX=hosts LOG_LEVEL=warning
# noop with a 5 s lease, so a lost host's jobs come back within seconds.
cp -r jobs "$dir/jobs"
sed -i 's/^visibility_timeout: .*/visibility_timeout: 5s/' "$dir/jobs/noop.yml"
export CARBSCAN_JOBS_DIR=$dir/jobs
log "cluster up: 3 masters and 3 replicas in cs-r1..cs-r6; worker hosts cs-w1, cs-w2"

declare -A workers=()
start_worker() { # NAME HOST
    spawn "$2" env DATABASE_URL=postgres://127.0.0.1:1/none "$binary" work --queues default --concurrency 100 --grace 10 \
        >>"$dir/worker-$1.log" 2>&1 &
    workers[$1]=$!
}
counts() { # prints: recorded distinct succeeded failed dead queued running
    python3 - "$@" <<'PY'
import subprocess, json, sys
def cli(*args):
    return subprocess.run(["redis-cli", "-c", "-h", sys.argv[2], *args], capture_output=True, text=True).stdout
# The counts first: a job pushes its id before its success is counted, so the list read after them holds every job
# they count (read before, it missed the jobs that finished meanwhile).
stats = json.loads(subprocess.run([sys.argv[1], "jobs", "stats", "--json"], capture_output=True, text=True).stdout)
ids = cli("LRANGE", "{hosts-probe}:record", "0", "-1").split()
q = next(s for s in stats if s["queue"] == "default")
print(len(ids), len(set(ids)), q["succeededTotal"], q["failedTotal"], q["dead"], q["queued"], q["running"])
PY
}
entry=10.77.0.11 # a node the checks read through (moved off a killed node)
reset() { # FLUSHALL on every node (the replicas refuse it and follow their masters)
    for host in "${redis_hosts[@]}"; do redis-cli -h "${address[$host]}" flushall >/dev/null 2>&1 || true; done
}
enqueue() { # SLEEP_MS
    "$binary" jobs enqueue noop --count "$jobs" --payload "{\"sleepMs\": $1, \"record\": \"{hosts-probe}:record\"}" >/dev/null
}
# wait_done SECONDS: until every job succeeded (or the time is up); prints the counts.
wait_done() {
    local deadline=$((SECONDS + $1)) c
    while true; do
        c=$(counts "$binary" "$entry")
        read -r _ _ succeeded _ _ _ _ <<<"$c"
        if ((succeeded >= jobs || SECONDS >= deadline)); then echo "$c"; return; fi
        sleep 0.5
    done
}
report() { # NAME COUNTS ALLOWED_EXTRA_RUNS
    local name=$1 recorded distinct succeeded failed dead queued running
    read -r recorded distinct succeeded failed dead queued running <<<"$2"
    local ok=yes
    ((distinct == jobs && succeeded == jobs && failed == 0 && dead == 0 && queued == 0)) || ok=no
    ((recorded - distinct <= $3)) || ok=no
    log "$name: $jobs jobs; finished $distinct distinct (runs recorded $recorded: $((recorded - distinct)) twice, allowed $3); counts: succeeded $succeeded, failed $failed, dead $dead, queued $queued, running $running: $([[ $ok == yes ]] && echo PASS || echo FAIL)"
    [[ $ok == yes ]] || failures=$((failures + 1))
}
failures=0

# 1. A whole worker host killed.
reset
start_worker a w1
start_worker b w2
sleep 2
enqueue 200
sleep 1.5
log "killing every process of cs-w1 (kill -9)"
mapfile -t doomed < <(ip netns pids cs-w1)
kill -9 "${doomed[@]}" 2>/dev/null || true
report "kill host" "$(wait_done 120)" 100

# 2. A worker host cut off the network for longer than the lease, then back.
reset
start_worker a w1
sleep 2
enqueue 200
sleep 1.5
log "cutting cs-w1 off for 12 s"
ip link set cs-w1 down
sleep 12
ip link set cs-w1 up
report "cut host" "$(wait_done 120)" 100

# 3. A rolling deploy of every worker while the jobs flow (200 ms each: 20,000 take about 10 s on 4 × 100).
probe_jobs=$jobs
jobs=$deploy_jobs
reset
for name in "${!workers[@]}"; do kill -TERM "${workers[$name]}" 2>/dev/null || true; done
wait 2>/dev/null || true
workers=()
start_worker a w1
start_worker b w1
start_worker c w2
start_worker d w2
sleep 2
enqueue 200 &
producer=$!
for name in a b c d; do
    sleep 1
    host=w1
    [[ $name == [cd] ]] && host=w2
    kill -TERM "${workers[$name]}"
    wait "${workers[$name]}" || true
    start_worker "$name" "$host"
    log "replaced worker $name on cs-$host"
done
wait "$producer"
report "rolling deploy" "$(wait_done 120)" 0

# 4. The master of the queue's slot fails over to its replica while the workers run its jobs.
jobs=$probe_jobs
reset
for name in "${!workers[@]}"; do kill -TERM "${workers[$name]}" 2>/dev/null || true; done
wait 2>/dev/null || true
workers=()
master_of() { # SLOT: the address of the master serving it, as the entry node sees it
    redis-cli -h "$entry" cluster nodes | awk -v slot="$1" '$3 ~ /master/ && $3 !~ /fail/ {
        for (i = 9; i <= NF; i++) { n = split($i, r, "-"); if (n == 1) r[2] = r[1]; if (slot + 0 >= r[1] + 0 && slot + 0 <= r[2] + 0) { split($2, a, ":"); print a[1] } } }'
}
slot=$(redis-cli -h "$entry" cluster keyslot "{default}" | tr -d '\r')
old_master=$(master_of "$slot")
victim=
for host in "${redis_hosts[@]}"; do [[ ${address[$host]} == "$old_master" ]] && victim=$host; done
for host in "${redis_hosts[@]}"; do [[ $host != "$victim" ]] && { entry=${address[$host]}; break; }; done
start_worker a w1
start_worker b w2
sleep 2
# Jobs of 1 s: the 2,000 take 10 s on the 2 hosts' 200 slots, so the kill comes with most of them still to run.
CARBSCAN_DURABLE_ENQUEUE=1 enqueue 1000
sleep 1.5
log "killing cs-$victim, the master of the queue's slot $slot (kill -9), $(redis-cli -c -h "$entry" llen "{hosts-probe}:record" | tr -d '\r') jobs finished"
mapfile -t doomed < <(ip netns pids "cs-$victim")
kill -9 "${doomed[@]}" 2>/dev/null || true
killed_at=$(date +%s.%N)
until new_master=$(master_of "$slot") && [[ -n $new_master && $new_master != "$old_master" ]]; do sleep 0.05; done
log "slot $slot moved from $old_master to $new_master $(python3 -c "import sys,time; print(f'{time.time()-float(sys.argv[1]):.1f}')" "$killed_at") s after the kill"
report "master failover" "$(wait_done 120)" 200

# 5. Schedulers on two hosts: each fire of a schedule is enqueued once, and the fires go on when one scheduler's host
# dies. noop gets a schedule firing every minute (for the schedulers only; no worker runs, the fires stay queued).
for name in "${!workers[@]}"; do kill -TERM "${workers[$name]}" 2>/dev/null || true; done
wait 2>/dev/null || true
workers=()
reset
cp -r "$dir/jobs" "$dir/jobs-cron"
printf '\nschedules:\n  - { name: each-minute, cron: "* * * * *", timezone: UTC, payload: {} }\n' >>"$dir/jobs-cron/noop.yml"
# Start well inside a minute, so that the first boundary after the start is one both schedulers are ready for.
while (($(date +%-S) < 1 || $(date +%-S) > 45)); do sleep 1; done
for host in s1 s2; do
    spawn "$host" env CARBSCAN_JOBS_DIR="$dir/jobs-cron" LOG_LEVEL=info "$binary" schedule >>"$dir/scheduler-$host.log" 2>&1 &
done
queued() { read -r _ _ _ _ _ q _ <<<"$(counts "$binary" "$entry")"; echo "$q"; }
until_past_boundary() { sleep $((60 - $(date +%-S) + 3)); } # until 3 s past the next minute boundary
until_past_boundary
first=$(queued)
log "schedulers on cs-s1 and cs-s2, one minute boundary passed: $first fire(s) enqueued; killing cs-s1 (kill -9)"
mapfile -t doomed < <(ip netns pids cs-s1)
kill -9 "${doomed[@]}" 2>/dev/null || true
until_past_boundary
second=$(queued)
ok=yes
((first == 1 && second == 2)) || { ok=no; failures=$((failures + 1)); }
log "schedulers: fires enqueued after one boundary $first (expected 1), after the next with cs-s1 dead $second (expected 2): $([[ $ok == yes ]] && echo PASS || echo FAIL)"

((failures == 0)) && log "all checks passed" || { log "$failures check(s) failed; logs in $dir"; trap - EXIT; exit 1; }
