"""Measures one drain of jobs already queued (ops/bench/tracing.sh): polls a Redis counter every 5 ms until it
reaches N.

  python3 drain_measure.py --jobs N --redis-port P --done "HGET key field" --pids 1,2

jobs/s and the workers' CPU per job (utime+stime from /proc/PID/stat, summed over --pids) over the span from the
poll that first saw a finished job to the one that saw the last, so the workers' start-up is left out. Prints one JSON
object.
"""
import argparse
import json
import os
import socket
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def command(sock, words):
    """One command's integer answer (a bulk string holding a number, an integer, or nil as 0)."""
    sock.sendall(("*%d\r\n" % len(words) + "".join("$%d\r\n%s\r\n" % (len(w.encode()), w) for w in words)).encode())
    reply = b""
    while True:
        reply += sock.recv(4096)
        if reply.startswith(b"$-1\r\n"):
            return 0
        lines = reply.split(b"\r\n")
        if reply.startswith(b"$") and len(lines) >= 3:
            return int(lines[1])
        if reply.startswith(b":") and len(lines) >= 2:
            return int(lines[0][1:])


parser = argparse.ArgumentParser()
parser.add_argument("--jobs", type=int, required=True)
parser.add_argument("--redis-port", type=int, required=True)
parser.add_argument("--done", required=True)
parser.add_argument("--pids", required=True)
parser.add_argument("--timeout", type=float, default=600)
args = parser.parse_args()
pids = [int(p) for p in args.pids.split(",")]
sock = socket.create_connection(("127.0.0.1", args.redis_port))
deadline = time.monotonic() + args.timeout
first = t0 = cpu0 = None
done = 0
while done < args.jobs and time.monotonic() < deadline:
    done = command(sock, args.done.split())
    if first is None and done > 0:
        first, t0, cpu0 = done, time.monotonic(), sum(cpu_seconds(p) for p in pids)
    time.sleep(0.005)
t1, cpu1 = time.monotonic(), sum(cpu_seconds(p) for p in pids)
jobs = done - (first or 0)
seconds = t1 - (t0 or t1)
print(json.dumps({"jobs": jobs, "finished": done, "seconds": round(seconds, 3),
                  "jobs_per_s": round(jobs / seconds) if seconds > 0 else 0,
                  "worker_cpu_us_per_job": round((cpu1 - (cpu0 or cpu1)) * 1e6 / jobs, 1) if jobs > 0 else None}))
