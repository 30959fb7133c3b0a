#!/usr/bin/env python3
"""Usage: traffic.py BASE_URL OUTDIR setup USERS     registers USERS accounts, writes OUTDIR/users.json
       traffic.py BASE_URL OUTDIR run SECONDS      mixed traffic for SECONDS, writes OUTDIR/traffic.json

The soak benchmark's clients (standard library only). Each kind of request arrives as a Poisson stream at its rate
(SOAK_RATES, requests/s, default below) from random users: password sign-ins, POST logins (seed 002 events), offline
meal syncs (two new meals and one already sent), POST analyze (multipart PNG; half synchronous, half
`Prefer: respond-async`), POST chat (the same split) and devices/register (one in ten re-sends a known token).
A 202 is followed with GET jobs/{id}?wait=25 until the job ends. Every answer's status, every job id the API
handed back and the ids of everything that should have one effect (photos' meals, chat nonces, device tokens,
login event ids, meal localIds) are written to traffic.json for report.py.
"""
import json
import os
import random
import struct
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
import zlib
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor

BASE, OUT, COMMAND, ARG = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
RATES = {"signin": 0.5, "logins": 1, "meals": 1, "analyze": 1, "chat": 1, "devices": 1}
RATES.update({k: float(v) for k, v in (p.split("=") for p in os.environ.get("SOAK_RATES", "").split(",") if p)})


def call(method, path, body=None, token=None, headers=None, timeout=40):
    """(status, envelope or None, seconds); status 0 when no answer came (refused, reset, timed out)."""
    headers = dict(headers or {})
    if isinstance(body, (dict, list)):
        body, headers["Content-Type"] = json.dumps(body).encode(), "application/json"
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(BASE + path, data=body, method=method, headers=headers)
    started = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status, text = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, text = error.code, error.read()
    except Exception:  # noqa: BLE001 - any transport failure is "no answer"
        return 0, None, time.monotonic() - started
    try:
        envelope = json.loads(text) if text else None
    except ValueError:
        envelope = None
    return status, envelope, time.monotonic() - started


def png(size=16):
    """A small valid PNG (a coloured square): the API checks the magic bytes, the fake model takes it as is."""
    rows = b"".join(b"\x00" + bytes((200, 120 + x * 4, 40)) * size for x in range(size))
    chunk = lambda kind, data: struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def setup(count):
    users = []
    for i in range(count):
        email, password = f"soak{i}-{uuid.uuid4().hex[:8]}@example.com", "correct horse battery"
        status, envelope, _ = call("POST", "/auth/register", {"email": email, "password": password, "name": f"Soak {i}"})
        if status != 201:
            sys.exit(f"register {email}: {status} {envelope}")
        users.append({"email": email, "password": password, "token": envelope["data"]["accessToken"]})
    json.dump(users, open(f"{OUT}/users.json", "w"))
    print(f"{count} users registered")


class Record:
    def __init__(self):
        self.lock = threading.Lock()
        self.answers = defaultdict(lambda: defaultdict(int))  # route -> status -> count
        self.seconds = defaultdict(list)  # route -> answer times
        self.jobs = defaultdict(list)  # kind -> job ids handed back
        self.unnamed = defaultdict(int)  # kind -> enqueues proven by an answer without the job id (sync 200, sign-ins)
        self.final = defaultdict(int)  # status of the followed 202 jobs when they ended
        self.effects = defaultdict(set)  # name -> ids that must each have exactly one effect

    def answer(self, route, status, seconds):
        with self.lock:
            self.answers[route][str(status)] += 1
            self.seconds[route].append(seconds)

    def add(self, table, key, value):
        with self.lock:
            if isinstance(table[key], set):
                table[key].add(value)
            elif isinstance(table[key], list):
                table[key].append(value)
            else:
                table[key] += value


record = Record()
photo = png()


def follow(job_id, token):
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        status, envelope, seconds = call("GET", f"/jobs/{job_id}?wait=25", token=token)
        record.answer("GET jobs/{id}?wait", status, seconds)
        if status == 200 and envelope["data"]["status"] in ("succeeded", "failed"):
            record.add(record.final, envelope["data"]["status"], 1)
            return
        if status != 200:
            time.sleep(2)
    record.add(record.final, "unfinished", 1)


def job_answer(kind, route, status, envelope, seconds, user):
    """analyze / chat / devices: 200 = done (no job id), 202 = job id to follow, 502 = the job died (id in details)."""
    record.answer(route, status, seconds)
    if status == 200:
        record.add(record.unnamed, kind, 1)
    elif status == 202:
        job_id = envelope["data"]["jobId"]
        record.add(record.jobs, kind, job_id)
        follow(job_id, user["token"])
    elif status == 502 and envelope and envelope.get("error", {}).get("code") == "JOB_FAILED":
        record.add(record.jobs, kind, envelope["error"]["details"]["jobId"])
        record.add(record.final, "failed (sync 502)", 1)
    return status


def signin(user):
    status, _, seconds = call("POST", "/auth/login", {"email": user["email"], "password": user["password"]})
    record.answer("POST auth/login", status, seconds)
    if status == 200:
        record.add(record.unnamed, "login-webhook", 1)


def logins(user):
    uid = f"soak-{uuid.uuid4()}"
    body = {"provider": "apple", "provider_uid": uid, "email": user["email"], "display_name": "Soak",
            "client_timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    status, envelope, seconds = call("POST", "/logins", body, token=user["token"])
    record.answer("POST logins", status, seconds)
    if status == 202:
        record.add(record.jobs, "login-webhook", envelope["data"]["jobId"])
        record.add(record.effects, "login_event_ids", envelope["data"]["eventId"])


def meals(user):
    with record.lock:
        sent = user.setdefault("sent", [])
        again = random.sample(sent, 1) if sent else []
    fresh = [{"localId": f"soak-{uuid.uuid4()}", "name": "Toast", "carbEstimate": 30, "confidenceLevel": 0.8,
              "createdAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())} for _ in range(2)]
    body = {"localMeals": fresh + again}
    if user.get("synced"):
        body["lastSyncTimestamp"] = user["synced"]
    status, envelope, seconds = call("POST", "/meals/sync", body, token=user["token"])
    record.answer("POST meals/sync", status, seconds)
    for meal in fresh:
        record.add(record.effects, "local_ids_sent", meal["localId"])
    if status == 200:
        with record.lock:
            sent.extend(fresh)
            user["synced"] = envelope["data"]["serverTimestamp"]
        for meal in fresh:
            record.add(record.effects, "local_ids_ok", meal["localId"])


def analyze(user):
    boundary = uuid.uuid4().hex
    metadata = json.dumps({"deviceModel": "iPhone 15 Pro", "osVersion": "17.0", "appVersion": "1.0.0", "lighting": "natural"})
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"metadata\"\r\nContent-Type: application/json\r\n\r\n"
            f"{metadata}\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"image\"; filename=\"meal.png\"\r\n"
            f"Content-Type: image/png\r\n\r\n").encode() + photo + f"\r\n--{boundary}--\r\n".encode()
    headers = {"Content-Type": f"multipart/form-data; boundary={boundary}"}
    if random.random() < 0.5:
        headers["Prefer"] = "respond-async"
    status, envelope, seconds = call("POST", "/analyze", body, token=user["token"], headers=headers)
    if status == 200:
        record.add(record.effects, "meal_ids", envelope["data"]["mealId"])
    job_answer("analysis", "POST analyze", status, envelope, seconds, user)


def chat(user):
    nonce = uuid.uuid4().hex
    headers = {"Prefer": "respond-async"} if random.random() < 0.5 else {}
    status, envelope, seconds = call("POST", "/chat", {"message": f"How many carbs are in a banana? ({nonce})"},
                                     token=user["token"], headers=headers)
    record.add(record.effects, "chat_nonces_sent", nonce)
    job_answer("chat", "POST chat", status, envelope, seconds, user)


def devices(user):
    with record.lock:
        known = list(record.effects["device_tokens_sent"])
    resent = bool(known) and random.random() < 0.1
    token = random.choice(known) if resent else os.urandom(32).hex()
    body = {"deviceToken": token, "platform": "ios", "deviceModel": "iPhone 15 Pro", "osVersion": "17.0", "appVersion": "1.0.0"}
    status, envelope, seconds = call("POST", "/devices/register", body, token=user["token"])
    record.add(record.effects, "device_tokens_sent", token)
    status = job_answer("push-registration", "POST devices/register", status, envelope, seconds, user)
    if status in (200, 202):
        record.add(record.effects, "device_tokens_ok", token)
    elif status == 0 or status >= 500:
        # The job may be in (a 503 after the enqueue, while the wait met a Redis outage): a fresh token's row tells.
        if resent:
            record.add(record.unnamed, "push-registration?", 1)
        else:
            record.add(record.effects, "device_tokens_unknown", token)


def run(seconds):
    users = json.load(open(f"{OUT}/users.json"))
    kinds = {"signin": signin, "logins": logins, "meals": meals, "analyze": analyze, "chat": chat, "devices": devices}
    end = time.monotonic() + seconds
    pool = ThreadPoolExecutor(max_workers=96)

    def ticker(name, rate):
        while True:
            time.sleep(random.expovariate(rate))
            if time.monotonic() >= end:
                return
            pool.submit(kinds[name], random.choice(users))

    tickers = [threading.Thread(target=ticker, args=(n, r)) for n, r in RATES.items() if r > 0]
    for t in tickers:
        t.start()
    for t in tickers:
        t.join()
    pool.shutdown(wait=True)

    def percentile(values, p):
        values = sorted(values)
        return round(values[min(len(values) - 1, int(p * len(values)))] * 1000) if values else None

    summary = {
        "seconds": seconds, "rates": RATES,
        "answers": {route: dict(statuses) for route, statuses in record.answers.items()},
        "latency_ms": {route: {"p50": percentile(v, 0.5), "p99": percentile(v, 0.99), "max": percentile(v, 1)}
                       for route, v in record.seconds.items()},
        "jobs": dict(record.jobs), "unnamed": dict(record.unnamed), "followed": dict(record.final),
        "effects": {name: sorted(ids) for name, ids in record.effects.items()},
    }
    json.dump(summary, open(f"{OUT}/traffic.json", "w"), indent=1)
    print("traffic done:", json.dumps(summary["answers"]))


if COMMAND == "setup":
    setup(int(ARG))
else:
    run(float(ARG))
