"""Slow and abusive clients against a running `carbscan serve` (ops/bench/slow-clients.sh runs it).

    python3 slow_clients.py HOST PORT --slowloris N --stalled-bodies N --idle N --seconds S

A well-behaved client (a process of its own) sends GET /api/mobile/v1/config on one keep-alive connection every 10 ms, first alone
(baseline), then while the abusers are connected: N connections trickling their headers one byte a second
(slowloris), N that announce a body and stop sending it, N idle keep-alives that made one request and wait. Prints
JSON: the good client's latency (p50/p99/max, errors) in both phases, and how many abusive connections the server
closed and how long after their last byte.
"""

import argparse
import asyncio
import json
import statistics
import sys
import time

PATH = "/api/mobile/v1/config"


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))] if ordered else None


async def read_response(reader):
    """One response with a Content-Length body (the API sends no other kind)."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length"))
    await reader.readexactly(length)


async def good_client(host, port, seconds):
    """Latencies (ms) of requests one after another on one keep-alive connection, reconnecting after an error."""
    latencies, errors = [], 0
    reader = writer = None
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            if writer is None:
                reader, writer = await asyncio.open_connection(host, port)
            started = time.monotonic()
            writer.write(f"GET {PATH} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
            await writer.drain()
            await asyncio.wait_for(read_response(reader), 5)
            latencies.append((time.monotonic() - started) * 1000)
        except Exception:
            errors += 1
            if writer is not None:
                writer.close()
            reader = writer = None
        await asyncio.sleep(0.01)
    if writer is not None:
        writer.close()
    return {
        "requests": len(latencies),
        "errors": errors,
        "p50_ms": round(statistics.median(latencies), 2) if latencies else None,
        "p99_ms": round(percentile(latencies, 0.99), 2) if latencies else None,
        "max_ms": round(max(latencies), 2) if latencies else None,
    }


class Abuser:
    """One abusive connection; `closed_after`: seconds from its last whole request part (for a slowloris, which never
    sends one: from connecting) to the server closing it."""

    def __init__(self, kind):
        self.kind = kind
        self.closed_after = None

    async def run(self, host, port, stop):
        try:
            reader, writer = await asyncio.open_connection(host, port)
        except OSError:
            self.kind = "refused"
            return
        last_sent = opened = time.monotonic()
        try:
            if self.kind == "idle":
                writer.write(f"GET {PATH} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
                await writer.drain()
                await read_response(reader)
                last_sent = time.monotonic()
                await self.wait_for_close(reader, stop, last_sent)
            elif self.kind == "stalled-body":
                writer.write(
                    f"POST /api/mobile/v1/auth/login HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                    "Content-Length: 1000\r\n\r\n{\"email\":".encode()
                )
                await writer.drain()
                last_sent = time.monotonic()
                await self.wait_for_close(reader, stop, last_sent)
            else:  # slowloris: the request line and headers one byte a second, never finished
                for byte in f"GET {PATH} HTTP/1.1\r\nHost: {host}\r\nX-Padding: {'a' * 200}".encode():
                    writer.write(bytes([byte]))
                    await writer.drain()
                    last_sent = opened
                    if await self.closed(reader, 1.0, since=opened) or stop.is_set():
                        return
        except (ConnectionError, asyncio.IncompleteReadError):
            self.closed_after = time.monotonic() - last_sent
        finally:
            writer.close()

    async def closed(self, reader, timeout, since):
        """Whether the server closed the connection within `timeout` (then `closed_after` counts from `since`)."""
        try:
            if await asyncio.wait_for(reader.read(1), timeout) == b"":
                self.closed_after = time.monotonic() - since
                return True
        except asyncio.TimeoutError:
            pass
        return False

    async def wait_for_close(self, reader, stop, last_sent):
        while not stop.is_set():
            if await self.closed(reader, 0.5, since=last_sent):
                return


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("host")
    parser.add_argument("port", type=int)
    parser.add_argument("--slowloris", type=int, default=1000)
    parser.add_argument("--stalled-bodies", type=int, default=1000)
    parser.add_argument("--idle", type=int, default=10000)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--good-only", action="store_true", help="only the well-behaved client (the measuring process)")
    args = parser.parse_args()
    if args.good_only:
        print(json.dumps(await good_client(args.host, args.port, args.seconds)))
        return

    async def measured(seconds):
        # In a process of its own: this one's event loop is busy with thousands of abusive sockets, and its lag
        # would be counted as the server's.
        child = await asyncio.create_subprocess_exec(
            sys.executable, __file__, args.host, str(args.port), "--good-only", "--seconds", str(seconds),
            stdout=asyncio.subprocess.PIPE,
        )
        out, _ = await child.communicate()
        return json.loads(out)

    baseline = await measured(min(10, args.seconds))
    stop = asyncio.Event()
    abusers = (
        [Abuser("slowloris") for _ in range(args.slowloris)]
        + [Abuser("stalled-body") for _ in range(args.stalled_bodies)]
        + [Abuser("idle") for _ in range(args.idle)]
    )
    tasks = []
    # Connected in waves of 500, so the listen backlog is not what refuses them.
    for start in range(0, len(abusers), 500):
        tasks += [asyncio.create_task(a.run(args.host, args.port, stop)) for a in abusers[start : start + 500]]
        await asyncio.sleep(0.05)
    under_attack = await measured(args.seconds)
    stop.set()
    await asyncio.gather(*tasks, return_exceptions=True)

    closed = {}
    for kind in ("slowloris", "stalled-body", "idle", "refused"):
        group = [a for a in abusers if a.kind == kind]
        if not group:
            continue
        after = [a.closed_after for a in group if a.closed_after is not None]
        closed[kind] = {
            "connections": len(group),
            "closed_by_server": len(after),
            "closed_after_s_median": round(statistics.median(after), 1) if after else None,
            "closed_after_s_max": round(max(after), 1) if after else None,
        }
    print(json.dumps({"baseline": baseline, "under_attack": under_attack, "abusers": closed}, indent=2))


asyncio.run(main())
