"""Measures one slow-provider run (ops/bench/slow-provider.sh): polls every 10 ms until the workers finished N jobs.

  python3 slow_provider_measure.py --jobs N --redis-port P --done "HGET key field" --server URL --pids 1,2 --server-pid S

jobs/s = N / (time of the last finished job as polled - the model's first request); worker CPU (utime+stime from
/proc/PID/stat, summed over --pids) from the poll that first saw a request at the model to the last one, per job, so
start-up is left out for both systems; the machine's busy cores (/proc/stat) and
those of Postgres (postmaster and backends), Redis and the model over that span; peak RSS = the sum of the processes' VmHWM; peak in flight as the model saw it.
Prints one JSON object.
"""

import argparse
import json
import os
import socket
import sys
import time
import urllib.request

CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def tree_cpu(root):
    """CPU seconds of `root` and its children (Postgres' backends), by pid: a backend may start mid-run."""
    if root is None:
        return {}
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(entry) == root or int(fields[1]) == root:
            found[int(entry)] = (int(fields[11]) + int(fields[12])) / CLK_TCK
    return found


def tree_delta(before, after):
    return sum(cpu - before.get(pid, 0) for pid, cpu in after.items())


def machine_busy_seconds():
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / CLK_TCK  # all but idle and iowait


def hwm_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


class Redis:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.file = self.sock.makefile("rb")

    def command(self, *args):
        out = f"*{len(args)}\r\n" + "".join(f"${len(a.encode())}\r\n{a}\r\n" for a in args)
        self.sock.sendall(out.encode())
        line = self.file.readline()
        if line[:1] == b"$":
            n = int(line[1:])
            if n < 0:
                return None
            value = self.file.read(n + 2)[:-2]
            return value.decode()
        if line[:1] == b":":
            return line[1:].strip().decode()
        if line[:1] == b"-":
            raise RuntimeError(line.decode())
        return line[1:].strip().decode()


def stats(server):
    with urllib.request.urlopen(server + "/stats", timeout=5) as response:
        return json.load(response)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, required=True)
    parser.add_argument("--redis-port", type=int, required=True)
    parser.add_argument("--redis-db", default="0")
    parser.add_argument("--done", required=True, help="the Redis command whose answer counts finished jobs")
    parser.add_argument("--failed", default="", help="the Redis command whose answer counts failed jobs")
    parser.add_argument("--server", required=True)
    parser.add_argument("--pids", required=True)
    parser.add_argument("--server-pid", type=int, required=True)
    parser.add_argument("--postmaster", type=int, help="Postgres' postmaster: its and its backends' CPU")
    parser.add_argument("--redis-pid", type=int)
    parser.add_argument("--extra-pid", action="append", default=[], help="NAME=PID: that process tree's CPU as NAME_cores")
    parser.add_argument("--timeout", type=float, default=600)
    args = parser.parse_args()
    pids = [int(p) for p in args.pids.split(",")]
    redis = Redis(args.redis_port)
    redis.command("SELECT", args.redis_db)
    deadline = time.time() + args.timeout
    cpu0 = server_cpu0 = None
    while True:
        if time.time() > deadline:
            sys.exit(f"timeout: {redis.command(*args.done.split())} of {args.jobs} done")
        if cpu0 is None and stats(args.server)["requests"] > 0:
            cpu0 = sum(cpu_seconds(p) for p in pids)
            server_cpu0 = cpu_seconds(args.server_pid)
            machine0 = machine_busy_seconds()
            pg0, redis0 = tree_cpu(args.postmaster), tree_cpu(args.redis_pid)
            extra0 = {name: tree_cpu(int(pid)) for name, pid in (e.split("=") for e in args.extra_pid)}
        done = int(redis.command(*args.done.split()) or 0)
        failed = int(redis.command(*args.failed.split()) or 0) if args.failed else 0
        if done + failed >= args.jobs:
            end = time.time()
            cpu1 = sum(cpu_seconds(p) for p in pids)
            server_cpu1 = cpu_seconds(args.server_pid)
            machine1 = machine_busy_seconds()
            pg1, redis1 = tree_cpu(args.postmaster), tree_cpu(args.redis_pid)
            extra1 = {name: tree_cpu(int(pid)) for name, pid in (e.split("=") for e in args.extra_pid)}
            break
        time.sleep(0.01)
    model = stats(args.server)
    seconds = end - model["firstRequestAt"]
    print(json.dumps({
        "jobs": args.jobs, "failed": failed, "seconds": round(seconds, 3), "jobs_per_s": round(args.jobs / seconds),
        "worker_cpu_us_per_job": round((cpu1 - cpu0) * 1e6 / args.jobs),
        "worker_cpu_cores": round((cpu1 - cpu0) / seconds, 2),
        "machine_cores": round((machine1 - machine0) / seconds, 2),
        "postgres_cores": round(tree_delta(pg0, pg1) / seconds, 2),
        "redis_cores": round(tree_delta(redis0, redis1) / seconds, 2),
        "model_cores": round((server_cpu1 - server_cpu0) / seconds, 2),
        "peak_rss_mb": round(sum(hwm_kb(p) for p in pids) / 1024),
        "peak_rss_mb_per_process": round(max(hwm_kb(p) for p in pids) / 1024),
        "postgres_cpu_us_per_job": round(tree_delta(pg0, pg1) * 1e6 / args.jobs),
        "peak_in_flight": model["peakInFlight"], "model_requests": model["requests"],
        "model_cpu_us_per_request": round((server_cpu1 - server_cpu0) * 1e6 / max(1, model["requests"])),
        **{f"{name}_cores": round(tree_delta(extra0[name], extra1[name]) / seconds, 3) for name in extra0},
    }))


main()
