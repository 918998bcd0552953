#!/usr/bin/env python3
"""Runs the whole Swift test suite as several serial `swift test` processes at once.

Called by scripts/test.sh (which starts PostgreSQL and PgBouncer and sets the tests'
environment first); not meant to be run alone.

Why processes and not `swift test --parallel`: Swift Testing runs parallel tests on the
cooperative thread pool, one thread per core (two here). Most of this suite's tests block
a thread on libpq or on a child process, so in one process the pool is full and the run
is no faster than serial. Each process has a pool of its own, and every test has a
database of its own, so batches of suites run side by side without sharing anything but
the PostgreSQL server and its PgBouncers. On the two-core development machine (887 tests):
404 s in one process at a time, 379 and 404 s in two, 414 s with `swift test --parallel`; the
serial run leaves the CPUs 60% idle, yet two processes gain little, so what limits the
suite there is still to be found (more cores should gain more).

The suites are listed with `swift test list`, cut into small batches in listing order and
handed out to COURIER_TEST_JOBS runners, each running one batch at a time with `swift
test --skip-build --no-parallel --filter`. Exits non-zero when a batch fails or when the
batches together ran fewer or more tests than the listing holds.

The default is 1 (serial), as CI runs it: with 2 on the two-core machine the cut-off
worker test (CutOffWorkerTests, which waits for a rescue within the lease) failed once in
four runs, its second worker starved by the other process; the others passed.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

BATCH_TESTS = 40  # tests per batch, about: small enough that the last batch ends the run soon
SUMMARY = re.compile(r"Test run with (\d+) tests? in \d+ suites? (passed|failed)")


def list_suites():
    """Every suite's identifier (Module.Suite) with its number of tests, in listing order."""
    listing = subprocess.run(["swift", "test", "list", "--skip-build"], check=True,
                             capture_output=True, text=True).stdout.split("\n")
    counts = {}
    for line in listing:
        if "/" in line:
            suite = line.split("/", 1)[0]
            counts[suite] = counts.get(suite, 0) + 1
    return counts


def batches_of(counts):
    batches, current, size = [], [], 0
    for suite, n in counts.items():
        current.append(suite)
        size += n
        if size >= BATCH_TESTS:
            batches.append(current)
            current, size = [], 0
    if current:
        batches.append(current)
    return batches


def main():
    text = os.environ.get("COURIER_TEST_JOBS", "1")
    if not text.isdigit() or int(text) < 1:
        sys.exit(f"COURIER_TEST_JOBS must be a whole number of processes, 1 or more (got {text!r})")
    jobs = int(text)
    counts = list_suites()
    expected = sum(counts.values())
    batches = batches_of(counts)
    logs = tempfile.mkdtemp(prefix="courier-test-logs-")
    print(f"{expected} tests in {len(counts)} suites, {len(batches)} batches, {jobs} at a time; logs in {logs}",
          flush=True)

    lock = threading.Lock()
    pending = list(enumerate(batches))
    results = {}  # batch index -> (tests ran, passed, seconds, log path)
    children = set()

    def runner():
        while True:
            with lock:
                if not pending:
                    return
                index, suites = pending.pop(0)
            pattern = "^(" + "|".join(re.escape(s) for s in suites) + ")/"
            log_path = os.path.join(logs, f"batch-{index + 1:02d}.log")
            started = time.monotonic()
            with open(log_path, "w") as log:
                child = subprocess.Popen(["swift", "test", "--skip-build", "--no-parallel", "--filter", pattern],
                                         stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
                with lock:
                    children.add(child)
                code = child.wait()
                with lock:
                    children.discard(child)
            seconds = time.monotonic() - started
            text = open(log_path, errors="replace").read()
            summary = SUMMARY.findall(text)
            ran = int(summary[-1][0]) if summary else 0
            passed = code == 0 and bool(summary) and summary[-1][1] == "passed"
            with lock:
                results[index] = (ran, passed, seconds, log_path)
                verdict = "passed" if passed else f"FAILED (exit {code})"
                print(f"[{len(results)}/{len(batches)}] {suites[0]} .. {suites[-1]}: {ran} tests {verdict} "
                      f"in {seconds:.0f} s", flush=True)
                if not passed:
                    failures = [line for line in text.split("\n") if line.startswith(("✘", "↳")) or "error:" in line]
                    print("\n".join(failures[-60:]) or text[-4000:], flush=True)

    started = time.monotonic()
    threads = [threading.Thread(target=runner) for _ in range(jobs)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    except KeyboardInterrupt:
        with lock:
            pending.clear()
            for child in children:
                os.killpg(child.pid, 15)
        raise

    ran = sum(r[0] for r in results.values())
    failed = [r[3] for r in results.values() if not r[1]]
    elapsed = time.monotonic() - started
    if failed:
        print(f"{len(failed)} of {len(batches)} batches failed ({ran} of {expected} tests ran, {elapsed:.0f} s): "
              + " ".join(failed), flush=True)
        sys.exit(1)
    if ran != expected:
        print(f"the batches ran {ran} tests but the listing holds {expected}", flush=True)
        sys.exit(1)
    shutil.rmtree(logs)  # kept only when something failed
    print(f"all {ran} tests in {len(counts)} suites passed in {elapsed:.0f} s ({jobs} processes)", flush=True)


if __name__ == "__main__":
    main()
