"""The slow model of ops/bench/slow-provider.sh: an OpenAI-compatible server answering every
POST /v1/chat/completions after a fixed delay, with a completion whose content is what carbscan's chat or
analysis handler expects (a request with an image part is an analysis).

  python3 slow_model.py PORT DELAY_MS

A request with `"stream":true` (carbscan's chat, when its events are recorded) gets the same answer as OpenAI's
server-sent `chat.completion.chunk`s, four characters of content per chunk (about a token each), all written at once
after the delay (the client parses every chunk as a real stream would make it).

It only counts: GET /stats gives requests, in flight now and at most, and the wall time of the first request and
the last answer; POST /stats/reset zeroes them. One asyncio event loop with a bare HTTP/1.1 protocol (Content-Length
bodies, keep-alive, no chunked requests: neither libcurl nor Net::HTTP sends them here) and a timer per request:
measured at 60-110 µs of CPU per request, against 210-240 µs for the same server in Hummingbird (2 event loops), so
the model takes the least CPU from the systems it measures on this 2-core machine.
"""

import asyncio
import json
import sys
import time


def completion(content):
    body = json.dumps({
        "id": "chatcmpl-bench", "object": "chat.completion", "created": 1700000000, "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": json.dumps(content)}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 60, "total_tokens": 160},
    }).encode()
    return b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)


def streamed(content):
    text = json.dumps(content)
    events = []
    for start in range(0, len(text), 4):
        chunk = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1700000000, "model": "gpt-4o-mini",
                 "choices": [{"index": 0, "delta": {"content": text[start:start + 4]}, "finish_reason": None}]}
        events.append(b"data: " + json.dumps(chunk).encode() + b"\n\n")
    last = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1700000000, "model": "gpt-4o-mini",
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    events.append(b"data: " + json.dumps(last).encode() + b"\n\n")
    events.append(b"data: [DONE]\n\n")
    body = b"".join(events)
    return b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)


CHAT_CONTENT = {
    "response": "A medium apple has about 25 g of carbohydrates, 4 g of them fibre.", "messageType": "carb_lookup",
    "followUpQuestions": ["And a banana?", "How about apple juice?"],
}
CHAT = completion(CHAT_CONTENT)
CHAT_STREAMED = streamed(CHAT_CONTENT)
ANALYSIS = completion({
    "compositeItemName": "Spaghetti bolognese", "carbEstimate": 72, "confidenceLow": 60, "confidenceHigh": 85,
    "confidenceLevel": 0.8, "analysis": "About 250 g of cooked spaghetti (70 g carbs) and a tomato meat sauce (2 g).",
})
NO_CONTENT = b"HTTP/1.1 204 No Content\r\n\r\n"
NOT_FOUND = b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"


class Stats:
    def __init__(self):
        self.reset()

    def reset(self):
        self.requests = self.in_flight = self.peak = 0
        self.first = self.last = None

    def response(self):
        body = json.dumps({
            "requests": self.requests, "inFlight": self.in_flight, "peakInFlight": self.peak,
            "firstRequestAt": self.first, "lastAnswerAt": self.last,
        }).encode()
        return b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)


class Model(asyncio.Protocol):
    def __init__(self, stats, delay):
        self.stats, self.delay = stats, delay
        self.buffer = b""

    def connection_made(self, transport):
        self.transport = transport

    def data_received(self, data):
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self.buffer[:end].decode("latin-1")
            length = 0
            for line in head.split("\r\n")[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            if len(self.buffer) < end + 4 + length:
                return
            body = self.buffer[end + 4:end + 4 + length]
            self.buffer = self.buffer[end + 4 + length:]
            self.handle(head.split(" ", 2)[:2], body)

    def handle(self, request, body):
        if request == ["POST", "/v1/chat/completions"]:
            stats = self.stats
            stats.requests += 1
            stats.in_flight += 1
            stats.peak = max(stats.peak, stats.in_flight)
            if stats.first is None:
                stats.first = time.time()
            answer = ANALYSIS if b'"image_url"' in body else CHAT_STREAMED if b'"stream":true' in body else CHAT
            asyncio.get_running_loop().call_later(self.delay, self.answer, answer)
        elif request == ["GET", "/stats"]:
            self.transport.write(self.stats.response())
        elif request == ["POST", "/stats/reset"]:
            self.stats.reset()
            self.transport.write(NO_CONTENT)
        else:
            self.transport.write(NOT_FOUND)

    def answer(self, answer):
        self.stats.in_flight -= 1
        self.stats.last = time.time()
        if not self.transport.is_closing():
            self.transport.write(answer)


async def main(port, delay):
    stats = Stats()
    server = await asyncio.get_running_loop().create_server(lambda: Model(stats, delay), "127.0.0.1", port, backlog=16384)
    await server.serve_forever()


asyncio.run(main(int(sys.argv[1]), int(sys.argv[2]) / 1000))
