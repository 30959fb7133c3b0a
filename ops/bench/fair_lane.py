"""The fair lane's acceptance (ops/bench/fair-lane.sh): one pro user queues a burst of async chats, then each of a few
free users asks one; how long each free user's answer takes from its submission, and how long the burst takes.

  python3 fair_lane.py BASE_URL PRO_TOKEN FREE_TOKENS_FILE BURST

Every chat is `POST chat` with `Prefer: respond-async` (202 and the job's id); each free user's job is followed by
long polls (`GET jobs/{id}?wait=30`) on its own thread, so its end is seen within a round trip; the burst's jobs are
then polled until all have ended. Prints one JSON object: the free users' seconds from submission to answer (sorted),
their median and worst, the seconds from the burst's first submission to its last answer, and how many failed.
"""

import json
import statistics
import sys
import threading
import time
import urllib.request

FINAL = {"succeeded", "failed", "cancelled", "expired"}


def call(base, method, path, token, body=None, prefer=None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(base + path, data=data, method=method)
    request.add_header("Authorization", "Bearer " + token)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    if prefer:
        request.add_header("Prefer", prefer)
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.load(response)["data"]


def ask(base, token, message):
    return call(base, "POST", "/chat", token, {"message": message}, prefer="respond-async")["jobId"]


def follow(base, token, job, submitted, out, index):
    while True:
        status = call(base, "GET", f"/jobs/{job}?wait=30", token)["status"]
        if status in FINAL:
            out[index] = (time.monotonic() - submitted, status)
            return


def main():
    base, pro, tokens_file, burst = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    free = [line.strip() for line in open(tokens_file) if line.strip()]
    started = time.monotonic()
    burst_jobs = [ask(base, pro, f"Carbs in rice, serving {i}?") for i in range(burst)]
    answers = [None] * len(free)
    threads = []
    for index, token in enumerate(free):
        submitted = time.monotonic()
        job = ask(base, token, "Carbs in an apple?")
        thread = threading.Thread(target=follow, args=(base, token, job, submitted, answers, index))
        thread.start()
        threads.append(thread)
    for thread in threads:
        thread.join()
    pending = set(burst_jobs)
    failed = sum(1 for _, status in answers if status != "succeeded")
    while pending:
        for job in list(pending):
            status = call(base, "GET", f"/jobs/{job}", pro)["status"]
            if status in FINAL:
                pending.discard(job)
                failed += status != "succeeded"
        if pending:
            time.sleep(0.2)
    burst_seconds = time.monotonic() - started
    seconds = sorted(round(s, 2) for s, _ in answers)
    print(json.dumps({
        "free_seconds": seconds, "free_median": round(statistics.median(seconds), 2), "free_worst": seconds[-1],
        "burst_seconds": round(burst_seconds, 1), "failed": failed,
    }))


if __name__ == "__main__":
    main()
