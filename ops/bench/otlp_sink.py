"""The OTLP/HTTP endpoint of ops/bench/tracing.sh: takes `POST /v1/traces` and answers 200 with an empty
ExportTraceServiceResponse (a protobuf message with no fields set is zero bytes; `{}` for JSON), decoding nothing,
so the collector costs the machine under measurement as little as possible (the test suite's receiver,
Tests/TestSupport/otlp_receiver.py, decodes and checks every span instead).

  python3 otlp_sink.py PORT

GET /stats gives the requests and body bytes received. One asyncio loop with a bare HTTP/1.1 protocol
(Content-Length bodies, keep-alive: what the exporter sends over libcurl), as slow_model.py does.
"""

import asyncio
import json
import sys

stats = {"requests": 0, "bytes": 0}


class Sink(asyncio.Protocol):
    def connection_made(self, transport):
        self.transport, self.buffer = transport, b""

    def data_received(self, data):
        self.buffer += data
        while True:
            head_end = self.buffer.find(b"\r\n\r\n")
            if head_end < 0:
                return
            head = self.buffer[:head_end].decode("latin-1").split("\r\n")
            headers = {line.split(":", 1)[0].strip().lower(): line.split(":", 1)[1].strip() for line in head[1:] if ":" in line}
            length = int(headers.get("content-length", "0"))
            if len(self.buffer) < head_end + 4 + length:
                return
            self.buffer = self.buffer[head_end + 4 + length:]
            method, path = head[0].split(" ")[:2]
            if method == "GET" and path == "/stats":
                self.answer("200 OK", "application/json", json.dumps(stats).encode())
            elif method == "POST" and path == "/v1/traces":
                stats["requests"] += 1
                stats["bytes"] += length
                json_body = headers.get("content-type", "").startswith("application/json")
                self.answer("200 OK", "application/json" if json_body else "application/x-protobuf", b"{}" if json_body else b"")
            else:
                self.answer("404 Not Found", "text/plain", b"not found")

    def answer(self, status, content_type, body):
        self.transport.write(b"HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s"
                             % (status.encode(), content_type.encode(), len(body), body))


async def main(port):
    server = await asyncio.get_running_loop().create_server(Sink, "127.0.0.1", port)
    async with server:
        await server.serve_forever()


asyncio.run(main(int(sys.argv[1])))
