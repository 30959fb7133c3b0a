#!/usr/bin/env python3
"""Usage: PSQL="psql -h … -d carbscan" report.py RUNDIR RESULTS RESTART_EVERY

The soak run's verdict, printed and written to RESULTS.md (beside RESULTS.png and RESULTS.csv): the machine; jobs
enqueued by the traffic (the job ids the API handed back, plus the enqueues an answer proves without naming the job:
synchronous 200s and sign-ins) against succeeded + dead per queue from `jobs stats`; the effects, which must be one per
job: meals per analysis job and per photo, chat rows per job and per message, device rows per token, synced meals
per localId, login table rows per event id (and per POST logins event); the memory of every process (RSS after
warm-up against the end, per worker between its restarts), fds and threads; the per-minute table; the logs' warnings.
"""
import csv
import json
import os
import shlex
import subprocess
import sys
from collections import Counter, defaultdict

run, results, restart_every = sys.argv[1], sys.argv[2], int(sys.argv[3])
load = lambda name: json.load(open(os.path.join(run, name)))
traffic, stats, users = load("traffic.json"), load("stats.json"), load("users.json")
lines = []
out = lines.append
problems = []


def sql(query):
    text = subprocess.run(shlex.split(os.environ["PSQL"]) + ["-At", "-F", "\t", "-c", query],
                          check=True, capture_output=True, text=True).stdout
    return [line.split("\t") for line in text.splitlines()]


def one(query):
    return int(sql(query)[0][0])


def check(ok, text):
    out(f"- {'✓' if ok else '✗'} {text}")
    if not ok:
        problems.append(text)


out(f"# Soak run {os.path.basename(results)}\n")
out("Issue 18 §3: `ops/bench/soak.sh` (its header says what runs). Machine and build:\n")
out("```\n" + open(os.path.join(run, "machine.txt")).read().strip() + "\n```\n")
out("Events (seconds since the traffic started):\n")
out("```\n" + open(os.path.join(run, "events.txt")).read().strip() + "\n```\n")

# --- Traffic ---
out("## Traffic\n")
out(f"Rates (requests/s, Poisson): {json.dumps(traffic['rates'])}; {len(users)} users (pro tier, set in Postgres).\n")
out("| route | answers by status | p50 ms | p99 ms | max ms |\n| --- | --- | --- | --- | --- |")
for route, statuses in sorted(traffic["answers"].items()):
    lat = traffic["latency_ms"][route]
    out(f"| `{route}` | {', '.join(f'{s}: {n}' for s, n in sorted(statuses.items()))} | {lat['p50']} | {lat['p99']} | {lat['max']} |")
out(f"\nFollowed 202 jobs (`GET jobs/{{id}}?wait=25` until they ended): {json.dumps(traffic['followed'])}\n")

# --- Jobs: enqueued against succeeded + dead ---
jobs, unnamed = traffic["jobs"], traffic["unnamed"]
kinds = {"ai": ["analysis", "chat"], "default": ["push-registration"], "webhooks": ["login-webhook"]}
enqueued = {k: len(jobs.get(k, [])) + unnamed.get(k, 0) for q in kinds.values() for k in q}
enqueued["login-webhook"] += len(users)  # each registration signed in once
# A device registration answered 503 (or not at all) may have enqueued its job: a fresh token with a row did.
device_rows = sql("SELECT token FROM devices")
tokens = Counter(r[0] for r in device_rows)
unknown = set(traffic["effects"].get("device_tokens_unknown", []))
enqueued["push-registration"] += len(unknown & set(tokens))
ambiguous = {"default": len(unknown - set(tokens)) + unnamed.get("push-registration?", 0)}
by_queue = {q["queue"]: q for q in stats}
out("## Jobs: enqueued = succeeded + dead\n")
out("Enqueued by the traffic, per kind: job ids handed back (202, 502) + enqueues an answer proves without the id "
    "(sync 200s; sign-ins, each with a login event)\n")
out("| kind | ids handed back | without id | enqueued |\n| --- | --- | --- | --- |")
for q, ks in kinds.items():
    for k in ks:
        out(f"| {k} | {len(jobs.get(k, []))} | {enqueued[k] - len(jobs.get(k, []))} | {enqueued[k]} |")
if unknown:
    out(f"\nDevice registrations answered 503 or not at all: {len(unknown)} fresh tokens, {len(unknown & set(tokens))} of "
        f"them have their row (their job ran: counted above); {unnamed.get('push-registration?', 0)} re-sent tokens unresolved.")
out("\n| queue | enqueued (traffic) | succeeded | dead | succeeded + dead | failed attempts | retried | left |\n"
    "| --- | --- | --- | --- | --- | --- | --- | --- |")
for name, q in sorted(by_queue.items()):
    expected = sum(enqueued[k] for k in kinds.get(name, []))
    left = q["queued"] + q["running"] + q["scheduled"] + q["retrying"]
    label = expected if name in kinds else "– (scheduler)"
    out(f"| {name} | {label} | {q['succeededTotal']} | {q['dead']} | {q['succeededTotal'] + q['dead']} | "
        f"{q['failedTotal']} | {q['retriedTotal']} | {left} |")
out("")
for name in kinds:
    q = by_queue[name]
    expected = sum(enqueued[k] for k in kinds[name])
    finished, extra = q["succeededTotal"] + q["dead"], ambiguous.get(name, 0)
    check(expected <= finished <= expected + extra,
          f"{name}: enqueued {expected}{f' (+ up to {extra} answered 503, unresolved)' if extra else ''} = "
          f"succeeded {q['succeededTotal']} + dead {q['dead']}")
check(all(q["queued"] + q["running"] + q["scheduled"] + q["retrying"] == 0 for q in stats), "every queue drained")
dead = load("dead.json") if os.path.getsize(os.path.join(run, "dead.json")) else []
for record in dead[:10]:
    out(f"  - dead: {record.get('kind')} {record.get('id')}: {str(record.get('error'))[:200]}")

# Postgres's own count of the jobs the API enqueued (each reservation is attached to its job after the enqueue).
scans = dict((s, int(n)) for s, n in sql("SELECT status, count(*) FROM scan_reservations WHERE job_id IS NOT NULL GROUP BY 1"))
chats = dict((s, int(n)) for s, n in sql("SELECT status, count(*) FROM chat_reservations WHERE job_id IS NOT NULL GROUP BY 1"))
signins = one("SELECT count(*) FROM login_events WHERE kind = 'signin'")
check(sum(scans.values()) == enqueued["analysis"],
      f"analysis jobs in Postgres (scan reservations with a job) {sum(scans.values())} = enqueued by the traffic {enqueued['analysis']}")
check(sum(chats.values()) == enqueued["chat"],
      f"chat jobs in Postgres (chat reservations with a job) {sum(chats.values())} = enqueued by the traffic {enqueued['chat']}")
check(signins == len(users) + unnamed.get("login-webhook", 0),
      f"sign-in rows in login_events {signins} = registrations {len(users)} + sign-ins answered 200 {unnamed.get('login-webhook', 0)}")
check(scans.get("reserved", 0) == 0 and chats.get("reserved", 0) == 0,
      f"no reservation left open: scans {scans}, chats {chats}")
not_enqueued = sum(open(os.path.join(run, "serve.log")).read().count(m) for m in ["login-webhook not enqueued", "login event not recorded"])
check(not_enqueued == 0, f"serve logged {not_enqueued} sign-ins whose event or webhook job was not recorded")

# --- Effects: one per job ---
out("\n## Effects: one per job, nothing twice\n")
meals_by_job = one("SELECT count(*) FROM meals WHERE job_id IS NOT NULL")
chat_rows = one("SELECT count(*) FROM chat_messages")
ai = by_queue["ai"]
check(meals_by_job == scans.get("charged", 0), f"meals written by analysis jobs {meals_by_job} = scans charged {scans.get('charged', 0)}")
check(chat_rows == chats.get("charged", 0), f"chat rows {chat_rows} = chats charged {chats.get('charged', 0)}")
check(meals_by_job + chat_rows == ai["succeededTotal"],
      f"meals {meals_by_job} + chat rows {chat_rows} = ai jobs succeeded {ai['succeededTotal']}")
check(scans.get("refunded", 0) + chats.get("refunded", 0) == ai["dead"],
      f"refunds (scans {scans.get('refunded', 0)}, chats {chats.get('refunded', 0)}) = ai jobs dead {ai['dead']}")
twice = lambda query: one(f"SELECT count(*) FROM ({query} HAVING count(*) > 1) twice")
check(twice("SELECT job_id FROM meals WHERE job_id IS NOT NULL GROUP BY job_id") == 0, "no analysis job id with two meals")
check(twice("SELECT photo_id FROM meals WHERE photo_id IS NOT NULL GROUP BY photo_id") == 0, "no photo with two meals")
mine = set(int(r[0]) for r in sql("SELECT id FROM meals WHERE job_id IS NOT NULL"))
missing = [m for m in traffic["effects"].get("meal_ids", []) if m not in mine]
check(not missing, f"every mealId of a sync 200 analyze is a meal ({len(traffic['effects'].get('meal_ids', []))}, missing {missing[:5]})")
check(twice("SELECT job_id FROM chat_messages GROUP BY job_id") == 0, "no chat job id with two rows")
check(twice("SELECT substring(message from '[(]([0-9a-f]{32})[)]') FROM chat_messages GROUP BY 1") == 0,
      "no chat message (its nonce) answered twice")
ok_tokens = set(traffic["effects"].get("device_tokens_ok", []))
sent_tokens = set(traffic["effects"].get("device_tokens_sent", []))
check(max(tokens.values(), default=1) == 1, f"one device row per token ({len(tokens)} rows)")
check(ok_tokens <= set(tokens), f"every token registered (200/202) has its row ({len(ok_tokens)} tokens, missing {len(ok_tokens - set(tokens))})")
check(set(tokens) <= sent_tokens, "no device row for a token never sent")
local = Counter(r[0] + "/" + r[1] for r in sql("SELECT user_id, local_id FROM meals WHERE local_id IS NOT NULL"))
local_ids = set(k.split("/", 1)[1] for k in local)
ok_local, sent_local = set(traffic["effects"].get("local_ids_ok", [])), set(traffic["effects"].get("local_ids_sent", []))
check(max(local.values(), default=1) == 1, f"one meal per synced localId ({len(local)} rows; each sync re-sent one meal)")
check(ok_local <= local_ids <= sent_local,
      f"synced meals: {len(ok_local)} answered 200 ≤ {len(local_ids)} rows ≤ {len(sent_local)} sent")

deliveries = [json.loads(l) for l in open(os.path.join(run, "logins.jsonl"))]
rows = {d["id"]: d for d in deliveries if d["status"] == 201}
expected_ids = set(r[0] for r in sql("SELECT event_id FROM login_events WHERE kind = 'signin'"))
expected_ids |= set(traffic["effects"].get("login_event_ids", []))
check(set(rows) == expected_ids, f"login table rows {len(rows)} = sign-in events + POST logins events {len(expected_ids)} "
      f"(missing {len(expected_ids - set(rows))}, unexpected {len(set(rows) - expected_ids)})")
uids = Counter(d["provider_uid"] for d in rows.values() if d["provider_uid"].startswith("soak-"))
check(max(uids.values(), default=1) == 1, "no POST logins event stored twice under two ids")
out(f"- login deliveries: {len(deliveries)} POSTs, {len(rows)} rows, "
    f"{sum(1 for d in deliveries if d['status'] == 409)} re-deliveries answered 409 (counted as delivered, no row)")
ai_calls = Counter(json.loads(l)["schema"] for l in open(os.path.join(run, "model.jsonl")))
out(f"- AI requests answered by the fake model: {dict(ai_calls)} (ai jobs succeeded {ai['succeededTotal']}, "
    f"failed attempts {ai['failedTotal']}); a worker stopped mid-request hands its job back, which asks again")

# --- Processes: memory, fds, threads ---
samples = list(csv.DictReader(open(os.path.join(run, "samples.csv"))))
last_minute = max(int(s["minute"]) for s in samples)
warm = min(5, max(1, last_minute // 2))
out(f"\n## Processes\n\nRSS after warm-up (minute {warm}; a worker: its sample 2 minutes after it started, or its first "
    "when it lived shorter; Redis likewise per pid) against the last sample (the end of the run, or just before the "
    "SIGTERM). Judged within 10%: serve, schedule, and each worker life of 3 minutes or more between those samples. "
    "Postgres is the postmaster and its backends summed (threads = processes).\n")
out("| process | pid | minutes | RSS warm MiB | RSS end MiB | change | RSS max MiB | fds min–max | threads min–max |\n"
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
lives = defaultdict(list)
for s in samples:
    key = (s["process"], s["pid"]) if s["process"].startswith(("work", "redis")) else (s["process"], "")
    lives[key].append(s)
for (name, pid), rows_ in sorted(lives.items(), key=lambda kv: (kv[0][0], int(kv[1][0]["minute"]))):
    first = int(rows_[0]["minute"])
    target = first + 2 if name.startswith("work") else warm
    w, end = next((r for r in rows_ if int(r["minute"]) >= target), rows_[0]), rows_[-1]
    rss = lambda r: int(r["rss_kb"]) / 1024
    change = (rss(end) - rss(w)) / rss(w) * 100
    fds, threads = [int(r["fds"]) for r in rows_], [int(r["threads"]) for r in rows_]
    pids = pid or ",".join(sorted(set(r["pid"] for r in rows_), key=int))
    out(f"| {name} | {pids} | {w['minute']}→{end['minute']} | {rss(w):.1f} | {rss(end):.1f} | {change:+.1f}% | "
        f"{max(map(rss, rows_)):.1f} | {min(fds)}–{max(fds)} | {min(threads)}–{max(threads)} |")
    # The Swift processes are judged; Redis (restarted once), Postgres and the Python peers are shown only.
    if name in ("serve", "schedule") or (name.startswith("work") and int(end["minute"]) - int(w["minute"]) >= 3):
        check(abs(change) <= 10, f"{name}{' ' + pid if pid else ''}: RSS {rss(w):.1f} → {rss(end):.1f} MiB ({change:+.1f}%), within 10%")

# --- Per-minute table ---
out("\n## Per minute\n\nEach cell: RSS MiB / open fds / threads (postgres: processes). Workers: the pid changes at a restart.\n")
names = ["serve", "work-1", "work-2", "schedule", "redis", "postgres", "model", "traffic"]
out("| minute | " + " | ".join(names) + " |\n| --- |" + " --- |" * len(names))
table = defaultdict(dict)
for s in samples:
    table[int(s["minute"])][s["process"]] = f"{int(s['rss_kb']) / 1024:.1f} / {s['fds']} / {s['threads']}"
for minute in sorted(table):
    out(f"| {minute} | " + " | ".join(table[minute].get(n, "–") for n in names) + " |")

# --- Logs ---
out("\n## Logs\n\nLines by level, and the warnings and errors by message (count):\n")
for name in ["serve", "work-1", "work-2", "schedule"]:
    levels, messages = Counter(), Counter()
    for line in open(os.path.join(run, f"{name}.log"), errors="replace"):
        try:
            entry = json.loads(line)
        except ValueError:
            levels["(not JSON)"] += 1
            messages["(not JSON) " + line.strip()[:120]] += 1
            continue
        levels[entry.get("level")] += 1
        if entry.get("level") in ("warning", "error", "critical"):
            messages[f"{entry['level']}: {entry.get('msg')}"] += 1
    out(f"- {name}: {dict(levels)}")
    for message, count in messages.most_common(8):
        out(f"  - {count}× {message[:200]}")

out("\n## Verdict\n")
out("All checks passed." if not problems else "Failed checks:\n" + "\n".join(f"- {p}" for p in problems))
open(results + ".md", "w").write("\n".join(lines) + "\n")
print("\n".join(l for l in lines if l.startswith("- ") or l.startswith("  - ")))
print("verdict:", "all checks passed" if not problems else f"{len(problems)} failed")
