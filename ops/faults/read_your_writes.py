#!/usr/bin/env python3
"""Usage: read_your_writes.py API_BASE USERS_JSON

ops/faults/pooled-postgres.sh's check that a user reads what they just wrote while the API reads from a replica
behind the primary: each of the first 10 users (soak/traffic.py's users.json) syncs a meal and at once asks
GET meals, then asks a synchronous chat and at once GET chat/history. Each must find what it wrote. Then, once the
replica has caught up (3 s), every user reads meals, insights and stats (reads the replica serves). Prints one line;
exits 1 with the misses.
"""
import json
import sys
import time
import urllib.request
import uuid

BASE, USERS = sys.argv[1], json.load(open(sys.argv[2]))[:10]


def call(method, path, token, body=None):
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    request = urllib.request.Request(BASE + path, data=data, method=method, headers=headers)
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())["data"]


misses, checks = [], 0
for user in USERS:
    token = user["token"]
    local_id = f"ryw-{uuid.uuid4()}"
    meal = {"localId": local_id, "name": "Porridge", "carbEstimate": 42, "confidenceLevel": 0.9,
            "createdAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    call("POST", "/meals/sync", token, {"localMeals": [meal]})
    listed = call("GET", "/meals?limit=100", token)["meals"]
    checks += 1
    if local_id not in {m.get("localId") for m in listed}:
        misses.append(f"{user['email']}: synced meal {local_id} missing from GET meals")
    question = f"How many carbs in porridge? ({uuid.uuid4().hex[:8]})"
    call("POST", "/chat", token, {"message": question})
    history = call("GET", "/chat/history?limit=20", token)["messages"]
    checks += 1
    if question not in {m["message"] for m in history}:
        misses.append(f"{user['email']}: answered chat missing from GET chat/history")

time.sleep(3)
for user in json.load(open(sys.argv[2])):
    for path in ("/meals?limit=20", "/insights", "/user/stats"):
        call("GET", path, user["token"])

if misses:
    print("\n".join(misses))
    sys.exit(1)
print(f"read-your-writes: {checks}/{checks} reads right after the write found it")
