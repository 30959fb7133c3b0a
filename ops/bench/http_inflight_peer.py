"""The slow AI provider for ops/bench/http-inflight.sh: holds every request until EXPECT are in flight at once, waits
HOLD seconds more, then answers them all with a small chat-completion JSON body.

Usage: python3 http_inflight_peer.py h1 PORT EXPECT HOLD
       python3 http_inflight_peer.py h2 PORT EXPECT HOLD CERT KEY MAX_STREAMS
h1: cleartext HTTP/1.1 on plain asyncio (keep-alive; cheap enough to hold 10,000 connections).
h2: HTTPS with ALPN h2 (Hypercorn, from PyPI), announcing MAX_STREAMS concurrent streams per connection.
GET /stats answers at once: {"in_flight", "max_in_flight", "answered", "connections"} (connections: distinct client
ports seen by held requests). Any other path is a held request; a request still held after 300 s is answered anyway.
"""
import asyncio
import json
import socket
import sys

ANSWER = json.dumps(
    {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": 1764000000,
        "model": "bench",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": json.dumps({"items": [{"name": "rice", "carbs_g": 45}]})},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 812, "completion_tokens": 21, "total_tokens": 833},
    }
).encode()


class Held:
    def __init__(self, expect, hold):
        self.expect, self.hold = expect, hold
        self.in_flight = self.max_in_flight = self.answered = 0
        self.ports = set()
        self.released = asyncio.Event()

    async def wait(self, port):
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        self.ports.add(port)
        if self.in_flight == self.expect:
            asyncio.get_running_loop().call_later(self.hold, self.released.set)
        try:
            await asyncio.wait_for(self.released.wait(), 300)
        except asyncio.TimeoutError:
            pass
        self.in_flight -= 1
        self.answered += 1

    def stats(self):
        return json.dumps(
            {
                "in_flight": self.in_flight,
                "max_in_flight": self.max_in_flight,
                "answered": self.answered,
                "connections": len(self.ports),
            }
        ).encode()


async def serve_h1(held, sock):
    async def connection(reader, writer):
        port = writer.get_extra_info("peername")[1]
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                path = lines[0].split(" ")[1]
                length = 0
                for line in lines[1:]:
                    name, _, value = line.partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value)
                if length:
                    await reader.readexactly(length)
                if path == "/stats":
                    body = held.stats()
                else:
                    await held.wait(port)
                    body = ANSWER
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(connection, sock=sock, backlog=4096)
    await server.serve_forever()


async def serve_h2(held, sock, certificate, key, max_streams):
    from hypercorn.asyncio import serve
    from hypercorn.config import Config

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        if scope["path"] == "/stats":
            body = held.stats()
        else:
            await held.wait(scope["client"][1])
            body = ANSWER
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    config = Config()
    config.certfile, config.keyfile = certificate, key
    config.bind = [f"fd://{sock.detach()}"]
    config.h2_max_concurrent_streams = max_streams
    config.backlog = 4096
    config.keep_alive_timeout = 600
    config.accesslog = config.errorlog = None
    await serve(app, config, mode="asgi")


async def main():
    mode, port, expect, hold = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(4096)
    held = Held(expect, hold)
    if mode == "h1":
        await serve_h1(held, sock)
    else:
        await serve_h2(held, sock, sys.argv[5], sys.argv[6], int(sys.argv[7]))


if __name__ == "__main__":
    asyncio.run(main())
