"""A real HTTP/2 server for the client tests (Hypercorn, from PyPI): HTTPS with ALPN offering h2 and http/1.1, as the
OpenAI API does, on one port, and cleartext HTTP/1.1 (like a local llama.cpp server) on another, both serving one app.

Usage: python3 h2_peer.py CERT KEY MAX_STREAMS
Prints "ports TLS_PORT CLEAR_PORT" once both listen. MAX_STREAMS is the SETTINGS_MAX_CONCURRENT_STREAMS it sends.
  GET /info?ms=N&until=K  waits until K requests are in flight, once (at most 20 s), then N ms, then answers JSON: the
                  request's HTTP version ("2", "1.1") and the client's TCP port, which tells the connection that carried it.
  GET /stats      JSON: the most /info requests in flight at once, every client port /info saw, and how many
                  /events responses were written to their end.
  GET /events?n=N server-sent events: `data: 1`, then nothing until /release (at most 20 s), then `data: 2` to `N`.
  GET /release    lets the held /events responses go on.
"""
import asyncio
import json
import os
import socket
import sys
from urllib.parse import parse_qs

from hypercorn.asyncio import serve
from hypercorn.config import Config

in_flight = 0
max_in_flight = 0
ports = set()
reached = set()  # the `until` barriers already met: later requests pass them
released = False
events_finished = 0


async def app(scope, receive, send):
    global in_flight, max_in_flight, released, events_finished
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["path"] == "/info":
        query = parse_qs(scope["query_string"].decode())
        in_flight += 1
        max_in_flight = max(max_in_flight, in_flight)
        ports.add(scope["client"][1])
        try:
            # A barrier, so a loaded machine that starts requests slowly still sees them all in flight at once.
            until, waited = int(query.get("until", ["0"])[0]), 0
            while until not in reached and in_flight < until and waited < 2000:
                await asyncio.sleep(0.01)
                waited += 1
            reached.add(until)
            await asyncio.sleep(int(query.get("ms", ["0"])[0]) / 1000)
        finally:
            in_flight -= 1
        body = {"http_version": scope["http_version"], "client_port": scope["client"][1]}
    elif scope["path"] == "/stats":
        body = {"max_in_flight": max_in_flight, "ports": sorted(ports), "events_finished": events_finished}
    elif scope["path"] == "/release":
        released = True
        body = {}
    elif scope["path"] == "/events":
        count = int(parse_qs(scope["query_string"].decode()).get("n", ["1"])[0])
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
        await send({"type": "http.response.body", "body": b"data: 1\n\n", "more_body": True})
        waited = 0
        while not released and waited < 2000:
            await asyncio.sleep(0.01)
            waited += 1
        for n in range(2, count + 1):
            await send({"type": "http.response.body", "body": f"data: {n}\n\n".encode(), "more_body": True})
        await send({"type": "http.response.body", "body": b""})
        events_finished += 1
        return
    else:
        await send({"type": "http.response.start", "status": 404, "headers": []})
        await send({"type": "http.response.body", "body": b""})
        return
    data = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": data})


def listening_socket():
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(1024)  # before the ports are printed, so a client connecting at once is not refused
    return sock.getsockname()[1], sock.detach()


if __name__ == "__main__":
    certificate, key, max_streams = sys.argv[1], sys.argv[2], int(sys.argv[3])
    tls_port, tls_fd = listening_socket()
    clear_port, clear_fd = listening_socket()
    config = Config()
    config.certfile, config.keyfile = certificate, key
    config.bind = [f"fd://{tls_fd}"]
    config.insecure_bind = [f"fd://{clear_fd}"]
    config.h2_max_concurrent_streams = max_streams
    config.backlog = 1024
    # Idle connections stay open for the tests that check reuse, however slow a loaded machine makes them.
    config.keep_alive_timeout = 60
    config.accesslog = None
    config.errorlog = None
    print(f"ports {tls_port} {clear_port}", flush=True)
    parent = os.getppid()

    async def main():
        # A test process that dies (killed, crashed) never stops its peer: the peer stops when it is orphaned.
        server = asyncio.ensure_future(serve(app, config))
        while not server.done() and os.getppid() == parent:
            await asyncio.sleep(0.5)
        server.cancel()

    try:
        asyncio.run(main())
    except asyncio.CancelledError:
        pass
