"""Drives a real Chromium through a running `jobctl dashboard` (DashboardBrowserTests).

Usage: dashboard_browser.py BASE_URL DATABASE_URL ARTIFACT_DIR FIXTURES_JSON

FIXTURES_JSON names what the Swift test prepared: a waiting job to cancel, a dead letter
whose body is hostile markup, and the destination of the dead letters to replay. Every
step prints "ok: ..." and any failure exits non-zero; screenshots go to ARTIFACT_DIR.
"""
import json
import os
import sys

import psycopg
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

base, database_url, artifacts, fixtures = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
os.makedirs(artifacts, exist_ok=True)

options = webdriver.ChromeOptions()
options.binary_location = "/usr/bin/chromium"
for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1360,1000", "--disable-gpu"):
    options.add_argument(flag)
options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
driver = webdriver.Chrome(service=Service(executable_path="/usr/bin/chromedriver"), options=options)
db = psycopg.connect(database_url, autocommit=True)


def shot(name):
    driver.save_screenshot(os.path.join(artifacts, name + ".png"))


def wait(condition, what, timeout=30):
    try:
        WebDriverWait(driver, timeout, poll_frequency=0.2).until(lambda d: condition())
    except Exception:
        shot("failed-" + what.replace(" ", "-"))
        raise AssertionError("timed out waiting for: " + what)


def scalar(sql, *args):
    with db.cursor() as cur:
        cur.execute(sql, args)
        return cur.fetchone()[0]


def console_errors():
    return [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]


try:
    # 1. Every page loads, with its heading, and without console errors (a CSP violation is one).
    pages = {"/": "Overview", "/queues": "Queues", "/jobs": "Jobs", "/jobs/%d" % fixtures["job"]: "Job %d" % fixtures["job"],
             "/dead": "Dead letters", "/dead/%d" % fixtures["hostile_dead_letter"]: "Dead letter",
             "/breakers": "Breakers", "/destinations": "Destinations", "/workers": "Workers", "/schedules": "Schedules"}
    for path, heading in pages.items():
        driver.get(base + path)
        h1 = driver.find_element(By.TAG_NAME, "h1").text
        assert h1.startswith(heading), "%s: heading %r" % (path, h1)
        errors = console_errors()
        assert not errors, "%s: console errors %r" % (path, errors)
        shot("page" + (path.replace("/", "-") if path != "/" else "-overview"))
        print("ok: loaded", path)

    # 2. Live data: the overview changes after an enqueue, without a reload.
    driver.get(base + "/")
    driver.execute_script("window.__notReloaded = true;")
    assert "live-queue" not in driver.find_element(By.ID, "depth-rows").text
    scalar("select courier.enqueue(url => 'http://live.example/x', queue => 'live-queue', run_at => now() + interval '1 hour')")
    wait(lambda: "live-queue" in driver.find_element(By.ID, "depth-rows").text, "the new queue on the overview")
    assert driver.execute_script("return window.__notReloaded === true;"), "the page reloaded instead of updating"
    shot("overview-live")
    print("ok: live update after an enqueue")

    # 3. Replay a filtered set of dead letters from the page: preview first, then replay at a rate.
    destination = fixtures["replay_destination"]
    driver.get(base + "/dead")
    form = driver.find_element(By.CSS_SELECTOR, "form.filters")
    form.find_element(By.NAME, "destination").send_keys(destination)
    form.find_element(By.TAG_NAME, "button").click()
    wait(lambda: "destination=" in driver.current_url, "the filtered list")
    rate = driver.find_element(By.CSS_SELECTOR, "#replay-filtered input[name=rate]")
    rate.send_keys("50/s")
    driver.find_element(By.ID, "replay-filtered-button").click()
    wait(lambda: driver.find_elements(By.ID, "preview-total"), "the replay preview")
    preview = driver.find_element(By.ID, "preview-total").text
    assert "%d dead letters would be replayed" % fixtures["replay_count"] in preview, preview
    assert scalar("select count(*) from courier.jobs where destination = %s", destination) == 0, "the preview changed nothing"
    shot("replay-preview")
    driver.find_element(By.ID, "confirm-replay").click()
    wait(lambda: driver.find_elements(By.ID, "notice"), "the replay notice")
    assert "replayed %d dead letters" % fixtures["replay_count"] in driver.find_element(By.ID, "notice").text
    replayed = scalar("select count(*) from courier.jobs where destination = %s", destination)
    assert replayed == fixtures["replay_count"], "jobs in the database after the replay: %d" % replayed
    print("ok: replayed %d dead letters, now jobs in the database" % replayed)

    # 4. Cancel a job from its page.
    job = fixtures["job"]
    driver.get(base + "/jobs/%d" % job)
    driver.find_element(By.ID, "cancel").click()
    wait(lambda: driver.find_elements(By.ID, "notice"), "the cancel notice")
    assert "cancel job %d" % job in driver.find_element(By.ID, "notice").text
    assert scalar("select count(*) from courier.jobs where id = %s", job) == 0
    assert scalar("select count(*) from courier.dead_letters where job_id = %s and reason = 'cancelled'", job) == 1
    shot("job-cancelled")
    print("ok: cancelled job", job)

    # 5. A hostile body renders as text: no element, no handler ran.
    driver.get(base + "/dead/%d" % fixtures["hostile_dead_letter"])
    body = driver.find_element(By.ID, "body")
    assert "<img src=x onerror=" in body.text, body.text
    assert not driver.find_elements(By.CSS_SELECTOR, "#body img, main img"), "the body became markup"
    assert driver.execute_script("return window.__xss === undefined;"), "the hostile handler ran"
    shot("hostile-body-as-text")
    print("ok: hostile body shown as text")

    driver.get(base + "/")
    # The README's screenshot: once the page and its fonts are done, not after a pause.
    wait(lambda: driver.execute_script("return document.readyState === 'complete' && document.fonts.status === 'loaded';"),
         "the overview rendered")
    shot("dashboard-overview")
finally:
    driver.quit()
    db.close()
print("all browser checks passed")
