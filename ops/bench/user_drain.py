"""One drain as a carbscan user runs it (ops/bench/user-drain.sh): `carbscan jobs enqueue noop --count N`, then 2
`carbscan work` at their defaults (every queue, concurrency 2500, INFO log lines to a file, as a service's), and
`carbscan jobs stats --json` every 0.5 s until all N succeeded. Prints one JSON object.

  python3 user_drain.py --binary PATH --jobs N --prefix P --log FILE

from_start_per_s counts from the workers' spawn (their start-up included), from_first_progress_per_s from the first
reading that saw a job done; worker_cpu_us_per_job is both workers' utime+stime over the whole run, per job, and
redis_cpu_us_per_job the Redis server's over the same time (the stats readings included).
"""
import argparse
import json
import os
import signal
import subprocess
import time

parser = argparse.ArgumentParser()
parser.add_argument("--binary", required=True)
parser.add_argument("--jobs", type=int, default=300_000)
parser.add_argument("--prefix", required=True)
parser.add_argument("--log", default="/dev/null")
parser.add_argument("--log-level", help="the workers' LOG_LEVEL (default: unset, their default)")
parser.add_argument("--worker-args", default="", help="more `carbscan work` arguments, for experiments")
args = parser.parse_args()

env = dict(os.environ, CARBSCAN_PREFIX=args.prefix)
env.pop("LOG_LEVEL", None)
worker_env = dict(env, LOG_LEVEL=args.log_level) if args.log_level else env
clk_tck = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / clk_tck


def redis_pid():
    port = os.environ.get("REDIS_PORT", "56379")
    info = subprocess.run(["redis-cli", "-p", port, "info", "server"], capture_output=True, text=True, check=True).stdout
    return int(info.split("process_id:")[1].split()[0])


def succeeded():
    out = subprocess.run([args.binary, "jobs", "stats", "--json"], env=env, capture_output=True, text=True, check=True)
    return next(q["succeededTotal"] for q in json.loads(out.stdout) if q["queue"] == "default")


started = time.monotonic()
subprocess.run([args.binary, "jobs", "enqueue", "noop", "--count", str(args.jobs)], env=env, check=True,
               stdout=subprocess.DEVNULL)
enqueue_s = time.monotonic() - started

log = open(args.log, "a")
redis = redis_pid()
redis_before = cpu_seconds(redis)
spawned = time.monotonic()
workers = [subprocess.Popen([args.binary, "work", *args.worker_args.split()], env=worker_env, stdout=log, stderr=log)
           for _ in range(2)]
first = done = None
try:
    while done is None and time.monotonic() < spawned + 900:
        time.sleep(0.5)
        count = succeeded()
        now = time.monotonic()
        if first is None and count > 0:
            first = now
        if count >= args.jobs:
            done = now
    cpu = sum(cpu_seconds(w.pid) for w in workers)
    redis_cpu = cpu_seconds(redis) - redis_before
finally:
    for w in workers:
        w.send_signal(signal.SIGTERM)
    for w in workers:
        w.wait(timeout=60)
if done is None:
    raise SystemExit("the drain did not finish")
print(json.dumps({
    "enqueue_s": round(enqueue_s, 3),
    "from_start_per_s": round(args.jobs / (done - spawned), 1),
    "from_first_progress_per_s": round(args.jobs / (done - first), 1) if done > first else None,
    "worker_cpu_us_per_job": round(cpu * 1e6 / args.jobs, 1),
    "redis_cpu_us_per_job": round(redis_cpu * 1e6 / args.jobs, 1),
}))
