#!/usr/bin/env python3
"""Usage: model.py PORT LOGDIR

The soak benchmark's fake peers on 127.0.0.1:PORT (standard library only):
- an OpenAI-compatible model: POST /v1/chat/completions answers after 0.5-2 s with the JSON the worker asked for
  (`carb_estimate` for analysis, `chat_answer` for chat, told apart by the request's json_schema name);
  GET /v1/models lists gpt-4o-mini; anything else 404 (so the worker's llama.cpp `/props` probe says nothing).
- a Supabase/PostgREST-style login table: POST /rest/v1/logins keeps one row per `id` (201, then 409 `23505` for an id
  it has, as seed 002's primary key does), after 20-100 ms.
Every AI request and every login delivery is appended to LOGDIR/model.jsonl and LOGDIR/logins.jsonl.
"""
import json
import random
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

port, logdir = int(sys.argv[1]), sys.argv[2]
lock = threading.Lock()
login_rows = {}  # id -> body
ai_log = open(f"{logdir}/model.jsonl", "a", buffering=1)
login_log = open(f"{logdir}/logins.jsonl", "a", buffering=1)

FOODS = ["pasta with tomato sauce", "rice and chicken curry", "banana and oatmeal", "cheeseburger with fries", "greek salad"]
TOPICS = ["carb_lookup", "meal_advice", "nutrition_question", "general"]


def analysis_answer():
    carbs = round(random.uniform(5, 150), 1)
    return {
        "compositeItemName": random.choice(FOODS),
        "carbEstimate": carbs,
        "confidenceLow": round(carbs * 0.8, 1),
        "confidenceHigh": round(carbs * 1.2, 1),
        "confidenceLevel": round(random.uniform(0.5, 0.95), 2),
        "analysis": "Estimated from the visible portion: mostly starch, some sauce.",
    }


def chat_answer():
    return {
        "response": "A medium banana has about 27 g of carbohydrates, of which about 14 g are sugars.",
        "messageType": random.choice(TOPICS),
        "followUpQuestions": ["What about a small banana?", "Which fruits have fewer carbs?"],
    }


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send_json(self, status, value):
        body = b"" if value is None else json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/v1/models":
            self.send_json(200, {"object": "list", "data": [
                {"id": "gpt-4o-mini", "object": "model", "created": 1700000000, "owned_by": "openai"}]})
        else:
            self.send_json(404, {"error": {"message": "not found", "type": "invalid_request_error", "code": None}})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        if self.path == "/v1/chat/completions":
            self.completion(body)
        elif self.path == "/rest/v1/logins":
            self.login(body)
        else:
            self.send_json(404, {"code": "PGRST205", "message": f"no table {self.path}"})

    def completion(self, body):
        schema = body.get("response_format", {}).get("json_schema", {}).get("name")
        if "max_tokens" not in body or schema not in ("carb_estimate", "chat_answer"):
            self.send_json(400, {"error": {"message": f"unexpected request (schema {schema})", "type": "invalid_request_error", "code": None}})
            return
        started = time.time()
        time.sleep(random.uniform(0.5, 2.0))
        answer = analysis_answer() if schema == "carb_estimate" else chat_answer()
        ai_log.write(json.dumps({"at": started, "schema": schema, "seconds": round(time.time() - started, 3)}) + "\n")
        self.send_json(200, {
            "id": "chatcmpl-soak", "object": "chat.completion", "created": int(started), "model": body.get("model"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": json.dumps(answer)}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 120, "completion_tokens": 60, "total_tokens": 180},
        })

    def login(self, body):
        time.sleep(random.uniform(0.02, 0.1))
        row_id = body.get("id")
        with lock:
            duplicate = row_id in login_rows
            if not duplicate:
                login_rows[row_id] = body
            login_log.write(json.dumps({"at": time.time(), "id": row_id, "provider_uid": body.get("provider_uid"),
                                        "status": 409 if duplicate else 201}) + "\n")
        if duplicate:
            self.send_json(409, {"code": "23505", "details": f"Key (id)=({row_id}) already exists.", "hint": None,
                                 "message": 'duplicate key value violates unique constraint "logins_pkey"'})
        else:
            self.send_json(201, None)


server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
server.daemon_threads = True
server.serve_forever()
