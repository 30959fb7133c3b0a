"""Opens many server-sent event streams on one `carbscan serve` and holds them (ops/bench/event-streams.sh).

usage: sse_clients.py HOST PORT TOKEN JOBS_FILE STREAMS_PER_JOB READY_FILE DONE_FILE

Each stream is a raw HTTP/1.1 GET of jobs/{id}/events on its own connection. Once every stream has its first event
(`queued`), READY_FILE gets the time it took; the script then waits for every stream's final event and writes to
DONE_FILE how long after the first final event the last one came, and the count of streams that ended without one.
"""
import asyncio
import sys
import time

host, port, token, jobs_file, per_job, ready_file, done_file = sys.argv[1:8]
jobs = [line.strip() for line in open(jobs_file) if line.strip()]
per_job = int(per_job)
finals = []
first_events = 0
all_ready = asyncio.Event()
total = len(jobs) * per_job


async def follow(job):
    global first_events
    reader, writer = await asyncio.open_connection(host, int(port), limit=1 << 20)
    writer.write((f"GET /api/mobile/v1/jobs/{job}/events HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
                  "Accept: text/event-stream\r\n\r\n").encode())
    await writer.drain()
    seen_first = False
    buffer = b""
    final = None
    while True:
        chunk = await reader.read(65536)
        if not chunk:
            break
        buffer += chunk
        if not seen_first and b"event: queued" in buffer:
            seen_first = True
            first_events += 1
            if first_events == total:
                all_ready.set()
        if b"event: cancelled" in buffer or b"event: succeeded" in buffer:
            final = time.monotonic()
            break
    writer.close()
    if final is not None:
        finals.append(final)


async def main():
    started = time.monotonic()
    tasks = []
    for job in jobs:
        for _ in range(per_job):
            tasks.append(asyncio.create_task(follow(job)))
            if len(tasks) % 200 == 0:
                await asyncio.sleep(0.01)
    await asyncio.wait_for(all_ready.wait(), timeout=300)
    with open(ready_file, "w") as f:
        f.write(f"{time.monotonic() - started:.2f}\n")
    await asyncio.gather(*tasks, return_exceptions=True)
    with open(done_file, "w") as f:
        spread = (max(finals) - min(finals)) if finals else 0
        f.write(f"{spread:.3f} {total - len(finals)}\n")


asyncio.run(main())
