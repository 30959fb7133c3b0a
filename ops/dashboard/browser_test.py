"""The dashboard in headless Chromium (ops/dashboard/run.sh starts the system and the jobs, then this).

Signs in through the form, opens every page, waits for the live numbers, clicks pause/resume, retry, discard and
cancel (bulk and per job), and checks each effect in Redis with redis-cli. Keeps screenshots of the overview, the
dead jobs, a job, the queues and the processes in --screenshots.
"""

import argparse
import json
import os
import subprocess
import sys
import time
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

args = argparse.ArgumentParser()
for name in ("base", "user", "password", "redis", "prefix", "work", "screenshots"):
    args.add_argument("--" + name, required=True)
args = args.parse_args()


def redis(*command):
    return subprocess.run(["redis-cli", "-u", args.redis, *command], check=True, capture_output=True, text=True).stdout.strip()


def ids(name):
    with open(os.path.join(args.work, name + ".ids")) as file:
        return [line.strip() for line in file if line.strip()]


def key(queue, suffix):
    return f"{args.prefix}:{{{queue}}}:{suffix}"


def eventually(what, condition, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if condition():
            return
        time.sleep(0.2)
    sys.exit(f"browser_test: FAILED: {what} (waited {timeout} s)")


def check(what, condition):
    if not condition:
        sys.exit(f"browser_test: FAILED: {what}")
    print(f"browser_test: ok: {what}")


options = webdriver.ChromeOptions()
for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,860"):
    options.add_argument(flag)
options.binary_location = "/usr/bin/chromium"
browser = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
# Waiting for a page to replace a clicked element: chromedriver may answer a check made while the page is being
# replaced with "Node with given id does not belong to the document" (a WebDriverException) instead of a stale element;
# the wait asks again instead of failing (it did once in CI).
wait = WebDriverWait(browser, 20, ignored_exceptions=[WebDriverException])
os.makedirs(args.screenshots, exist_ok=True)


def shot(name):
    browser.save_screenshot(os.path.join(args.screenshots, name + ".png"))


def open_page(path):
    browser.get(args.base + path)
    wait.until(expected_conditions.presence_of_element_located((By.TAG_NAME, "h1")))


def accept_confirm():
    WebDriverWait(browser, 5).until(expected_conditions.alert_is_present())
    browser.switch_to.alert.accept()


try:
    dead, retrying, scheduled, running = ids("dead"), ids("retrying"), ids("scheduled"), ids("running")
    eventually("3 jobs dead", lambda: redis("ZCARD", key("default", "dead")) == "3")
    eventually("2 email jobs retrying", lambda: redis("ZCARD", key("mail", "retry")) == "2")
    eventually("the long job running", lambda: redis("HGET", key("default", "job:" + running[0]), "status") == "running")

    # Signing in: a page asked without a session goes to the form, and back after it.
    browser.get(args.base + "/ops/dead")
    wait.until(expected_conditions.url_contains("/ops/login"))
    browser.find_element(By.NAME, "user").send_keys(args.user)
    browser.find_element(By.NAME, "password").send_keys(args.password)
    browser.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    wait.until(expected_conditions.url_to_be(args.base + "/ops/dead"))
    check("the sign-in form leads back to the page asked for", "Dead" in browser.find_element(By.TAG_NAME, "h1").text)

    # Overview: the live numbers arrive without a reload.
    open_page("/ops/")
    wait.until(expected_conditions.text_to_be_present_in_element((By.ID, "live-status"), "Live"))
    time.sleep(2.5)  # a second sample, so the page shows per-minute rates
    row = browser.find_element(By.CSS_SELECTOR, 'tr[data-queue="default"]')
    check("overview lists the default queue with 3 dead", row.find_element(By.CSS_SELECTOR, '[data-live="dead"]').text == "3")
    check("overview shows the long job running", row.find_element(By.CSS_SELECTOR, '[data-live="running"]').text == "1")
    check("overview draws the 24 h chart", len(browser.find_elements(By.CSS_SELECTOR, "svg.chart polyline")) == 2)
    shot("overview")

    # Queues: pause, and resume at the end, seen in Redis.
    open_page("/ops/queues")
    button = browser.find_element(By.CSS_SELECTOR, 'tr[data-queue="default"] button')
    check("the default queue offers Pause", button.text == "Pause")
    button.click()
    wait.until(expected_conditions.staleness_of(button))
    check("pause: default is in the paused set", redis("SISMEMBER", args.prefix + ":paused", "default") == "1")
    wait.until(lambda _: browser.find_element(By.CSS_SELECTOR, 'tr[data-queue="default"] [data-live="paused"]').is_displayed())
    shot("queues")

    # Processes: the worker with its busy job.
    open_page("/ops/processes")
    check("processes lists the worker's busy job", running[0] in browser.page_source)
    shot("processes")

    # Dead: retry one (bulk), discard one (bulk, after a confirmation).
    open_page("/ops/dead")
    check("dead lists the 3 dead jobs", all(job in browser.page_source for job in dead))
    shot("dead")
    browser.find_element(By.CSS_SELECTOR, f'input[name="id"][value="{dead[0]}"]').click()
    browser.find_element(By.CSS_SELECTOR, 'button[value="retry"]').click()
    wait.until(expected_conditions.url_contains("done=retried"))
    # Workers see a pause within about a second: the retried job waits queued, or already ran again (and, failing for
    # good, died again: its record then holds two attempts' errors).
    def errors(job):
        return len(json.loads(redis("HGET", key("default", "job:" + job), "errors") or "[]"))

    eventually(
        "retry: the job left the dead set or ran again",
        lambda: redis("ZSCORE", key("default", "dead"), dead[0]) == "" or errors(dead[0]) == 2,
    )
    print("browser_test: ok: retry: the job left the dead set")
    browser.find_element(By.CSS_SELECTOR, f'input[name="id"][value="{dead[1]}"]').click()
    browser.find_element(By.CSS_SELECTOR, 'button[value="discard"]').click()
    accept_confirm()
    wait.until(expected_conditions.url_contains("done=discarded"))
    check("discard: the job's record is gone", redis("EXISTS", key("default", "job:" + dead[1])) == "0")
    check("discard: the other dead job stays", redis("ZSCORE", key("default", "dead"), dead[2]) != "")

    # Search by kind and by id.
    open_page("/ops/retrying?q=email")
    check("search by kind finds both email jobs", all(job in browser.page_source for job in retrying))
    open_page("/ops/retrying?q=" + retrying[0])
    check("search by id finds one job", len(browser.find_elements(By.CSS_SELECTOR, 'input[name="id"]')) == 1)

    # Scheduled: cancel in bulk.
    open_page("/ops/scheduled")
    browser.find_element(By.CSS_SELECTOR, "[data-select-all]").click()
    browser.find_element(By.CSS_SELECTOR, 'button[value="cancel"]').click()
    accept_confirm()
    wait.until(expected_conditions.url_contains("done=cancelled"))
    check("cancel: the delayed job is recorded cancelled", redis("HGET", key("default", "job:" + scheduled[0]), "status") == "cancelled")

    # A job's page: payload redacted, and cancelling the running job.
    open_page("/ops/jobs/" + dead[2])
    check("job page redacts the payload's secrets", "sk-live-do-not-show" not in browser.page_source and "[redacted]" in browser.page_source)
    check("job page shows the attempt's error", "noop asked to fail permanently" in browser.page_source)
    shot("job")
    open_page("/ops/jobs/" + running[0])
    browser.find_element(By.CSS_SELECTOR, 'form[action$="/cancel"] button').click()
    accept_confirm()
    eventually("the running job is recorded cancelled", lambda: redis("HGET", key("default", "job:" + running[0]), "status") == "cancelled")
    print("browser_test: ok: cancel: the running job is recorded cancelled")

    open_page("/ops/queues")
    button = browser.find_element(By.CSS_SELECTOR, 'tr[data-queue="default"] button')
    check("the paused queue offers Resume", button.text == "Resume")
    button.click()
    wait.until(expected_conditions.staleness_of(button))
    check("resume: default left the paused set", redis("SISMEMBER", args.prefix + ":paused", "default") == "0")
    eventually("the retried job ran again", lambda: errors(dead[0]) == 2)
    print("browser_test: ok: the retried job ran again")

    open_page("/ops/cron")
    check("cron lists scan-reset", "scan-reset" in browser.page_source)

    # Processes: quiet the worker (last: it takes no job after this).
    open_page("/ops/processes")
    worker = redis("ZRANGE", args.prefix + ":processes", "0", "0")
    check("the registry has the worker", worker != "")
    button = browser.find_element(By.CSS_SELECTOR, 'form[action$="/quiet"] button')
    button.click()
    wait.until(expected_conditions.staleness_of(button))
    eventually("quiet: the worker reports itself quiet", lambda: redis("HGET", args.prefix + ":process:" + worker, "state") == "quiet")
    print("browser_test: ok: quiet: the worker reports itself quiet")

    # Signing out ends the session.
    browser.find_element(By.CSS_SELECTOR, ".signout button").click()
    wait.until(expected_conditions.url_contains("/ops/login"))
    browser.get(args.base + "/ops/")
    check("after signing out, pages ask to sign in again", "/ops/login" in browser.current_url)
    print("browser_test: passed")
finally:
    browser.quit()
