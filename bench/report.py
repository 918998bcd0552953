#!/usr/bin/env python3
"""Builds bench/RESULTS.md from one bench/run.sh run (standard library only).

Usage: report.py RESULTS_DIR > RESULTS.md
RESULTS_DIR holds courier.jsonl (courier-bench rows), the peers harness rows
(pgqueuer.jsonl, pgqueuer_http.jsonl, pgbench.csv), env.txt, vmstat.log and phases.log.
Every figure is the median of the repetitions, with [min .. max].
"""

from __future__ import annotations

import csv
import json
import statistics
import subprocess
import sys
from collections import defaultdict
from datetime import datetime
from pathlib import Path

D = Path(sys.argv[1])


def rows(name: str) -> list[dict]:
    p = D / name
    if not p.exists():
        return []
    return [json.loads(x) for x in p.read_text().splitlines() if x.strip()]


courier = rows("courier.jsonl")
pgq = rows("pgqueuer.jsonl")
pgq_http = rows("pgqueuer_http.jsonl")
env = (D / "env.txt").read_text() if (D / "env.txt").exists() else ""


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def cell(xs, fmt="{:,.0f}"):
    if not xs:
        return "–"
    if len(xs) == 1:
        return fmt.format(xs[0])
    return f"{fmt.format(med(xs))} [{fmt.format(min(xs))} .. {fmt.format(max(xs))}]"


def by(rs, *keys):
    out = defaultdict(list)
    for r in rs:
        out[tuple(r.get(k) for k in keys)].append(r)
    return out


def env_value(prefix: str) -> str:
    for line in env.splitlines():
        if line.startswith(prefix):
            return line[len(prefix):].strip()
    return "?"


out: list[str] = []
w = out.append

# ------------------------------------------------------------------ collect headline figures
drain = [r for r in courier if r["bench"] == "drain" and not r.get("tag")]
longtx = [r for r in courier if r["bench"] == "drain" and r.get("tag") == "longtx"]
def archives(r):
    return r.get("retention", "24h") not in ("0", "0s", "0ms")


noop = by([r for r in drain if r["kind"] == "noop" and archives(r)], "workers", "concurrency")
noop0 = by([r for r in drain if r["kind"] == "noop" and not archives(r)], "workers", "concurrency")
http = by([r for r in drain if r["kind"] == "http"], "workers", "concurrency")


def best(groups):
    """(key, rows) of the configuration with the highest median jobs/s."""
    if not groups:
        return None, []
    k = max(groups, key=lambda k: med([r["jobs_per_s"] for r in groups[k]]))
    return k, groups[k]


def best_for_workers(groups, workers):
    return best({k: v for k, v in groups.items() if k[0] == workers})


pgq_drain = by([r for r in pgq if r["kind"] == "drain"], "procs", "qms_per_proc", "batch_size")
pgq_best_key, pgq_best = best(pgq_drain)
pgq_best_med = med([r["jobs_per_s"] for r in pgq_best])
pgbench_rows = by([r for r in courier if r["bench"] == "pgbench"], "clients")
raw_limit_key, raw_limit_rows = best(pgbench_rows)
raw_limit_med = med([r["jobs_per_s"] for r in raw_limit_rows])
pgqh = by([r for r in pgq_http if r.get("mode", r.get("kind")) == "drain"], "procs", "batch_size", "max_concurrent_tasks")
pgqh_best_key, pgqh_best = best(pgqh)
pgqh_best_med = med([r["jobs_per_s"] for r in pgqh_best])
def split_latency(rs: list[dict]) -> tuple[list[dict], list[dict]]:
    """Pickup rows on an empty queue, and (LAT_AHEAD) behind jobs scheduled a day ahead in the same queue."""
    pickups = [r for r in rs if r["bench"] == "latency"]
    return [r for r in pickups if not r.get("scheduled_ahead")], [r for r in pickups if r.get("scheduled_ahead")]


def ahead_label(rs: list[dict]) -> str:
    return f"{rs[0]['scheduled_ahead']:,} jobs scheduled ahead"


lat, lat_ahead = split_latency(courier)
pgq_lat = [r for r in pgq if r["kind"] == "latency"]
mem = [r for r in courier if r["bench"] == "memory"]
enq = [r for r in courier if r["bench"] == "enqueue"]
pgq_enq = [r for r in pgq if r["kind"] == "enqueue"]


def ratio(a, b):
    return a / b if b and b == b and a == a else float("nan")


def verdict(ok):
    return "**met**" if ok else "**missed**"


# ------------------------------------------------------------------ header
w("# Courier benchmark results")
w("")
w(f"Run of `bench/run.sh` started {env_value('date:')}; Courier commit {env_value('courier commit:')}. "
  "Every Courier figure uses the release build. Every cell is the median of the repetitions "
  "[min .. max]. Courier and the peers ran in the same run, interleaved by repetition, on the "
  "same private PostgreSQL, so the figures can be compared with each other (not with other runs).")
w("")
w("**Reproduce:** `bench/run.sh` (knobs at the top of the script; `QUICK=1` for a smoke run). "
  "It installs what is missing (Debian packages; the peers' venv from their `requirements.lock`), "
  "builds with `swift build -c release`, starts a private PostgreSQL with `jobctl devdb start` "
  "(default durability, no `--fast`), copies `../shared/bench/peers` and runs its scripts against "
  "that cluster (PGHOST/PGPORT/PGUSER point at it; its superuser is `courier`), starts the peers' "
  "nginx (`http/nginx.conf`, prefix `/tmp/bench-nginx/`), records `vmstat 1` throughout, and "
  "writes this file from the raw rows in `bench/results/`.")
w("")

# ------------------------------------------------------------------ headline
w("## Headline")
w("")
w("| figure | Courier | reference (same run) | ratio | aim | |")
w("|---|---|---|---|---|---|")
def drain_rows(groups, label, reference_name, reference, note=""):
    """One headline row per worker count: the best concurrency against the reference; returns the medians."""
    medians = []
    for workers in (1, 2):
        k, rs = best_for_workers(groups, workers)
        if not rs:
            continue
        m = med([r["jobs_per_s"] for r in rs])
        medians.append(m)
        w(f"| {label}, {workers} worker{'s' if workers > 1 else ''} (best: --concurrency {k[1]}) | "
          f"{cell([r['jobs_per_s'] for r in rs])} jobs/s | {reference_name} best {reference:,.0f} | "
          f"{ratio(m, reference):.2f}× | ≥ 2× | {verdict(ratio(m, reference) >= 2)}{note} |")
    return medians


noop_medians = drain_rows(noop, "no-op drain", "PgQueuer", pgq_best_med)
drain_rows(noop0, "no-op drain with `--retention 0` (no success archive)", "PgQueuer", pgq_best_med, " (not the default)")
if noop_medians and raw_limit_key:  # a run without the pgbench phase has no limit to compare with
    m = max(noop_medians)
    w(f"| no-op drain, best vs raw-SQL limit | {m:,.0f} jobs/s | Courier's claim+ack under pgbench, "
      f"{raw_limit_key[0] if raw_limit_key else '?'} clients: {raw_limit_med:,.0f} | {ratio(m, raw_limit_med):.0%} | ≥ 50% | "
      f"{verdict(ratio(m, raw_limit_med) >= 0.5)} |")
drain_rows(http, "HTTP drain (nginx)", "PgQueuer+aiohttp", pgqh_best_med)
if lat:
    p99 = [r["from_commit"]["p99_ms"] for r in lat]
    p50 = [r["from_commit"]["p50_ms"] for r in lat]
    q99 = [r["p99_ms"] for r in pgq_lat]
    w(f"| pickup latency p99, commit → request at server | {cell(p99, '{:.2f}')} ms (p50 {cell(p50, '{:.2f}')}) | "
      f"PgQueuer p99 {cell(q99, '{:.2f}')} ms (enqueue call → handler) | "
      f"{ratio(med(p99), med(q99)):.2f}× | ≤ 1× | {verdict(med(p99) <= med(q99))} |")
    e99 = [r["from_enqueue_call"]["p99_ms"] for r in lat]
    w(f"| pickup latency p99, measured as PgQueuer is (from before the enqueue call) | {cell(e99, '{:.2f}')} ms | "
      f"PgQueuer p99 {cell(q99, '{:.2f}')} ms | {ratio(med(e99), med(q99)):.2f}× | (same) | {verdict(med(e99) <= med(q99))} |")
for r in mem:
    mb = r["inflight_rss_kb"] / 1024
    w(f"| worker RSS, --concurrency {r['concurrency']}, {r['requests_in_flight']} slow requests in flight | "
      f"{mb:.1f} MB (idle {r['idle_rss_kb'] / 1024:.1f} MB) | – | – | ≤ 60 MB | {verdict(mb <= 60)} |")
if enq:
    j = [r["jobctl_jobs_per_s"] for r in enq]
    w(f"| bulk enqueue, `jobctl enqueue --ndjson` {enq[0]['lines']:,} lines, end to end | {cell(j)} jobs/s | "
      f"PgQueuer `enqueue` chunks of 1000: {cell([r['jobs_per_s'] for r in pgq_enq])} | "
      f"{ratio(med(j), med([r['jobs_per_s'] for r in pgq_enq])):.2f}× | ≥ 50k jobs/s | {verdict(med(j) >= 50000)} |")
    rich = [r["jobctl_rich_jobs_per_s"] for r in enq if "jobctl_rich_jobs_per_s" in r]
    if rich:
        w(f"| bulk enqueue, `jobctl enqueue --ndjson`, lines using most fields (headers, secret, schedule, deadline) | "
          f"{cell(rich)} jobs/s | – | – | ≥ 50k jobs/s | {verdict(med(rich) >= 50000)} |")
    uniq = [r["jobctl_unique_jobs_per_s"] for r in enq if "jobctl_unique_jobs_per_s" in r]
    if uniq:
        w(f"| bulk enqueue, `jobctl enqueue --ndjson`, webhook lines each with a `unique_key` (staging path) | "
          f"{cell(uniq)} jobs/s | – | – | – | |")
    c = [r["copy_jobs_per_s"] for r in enq]
    w(f"| bulk enqueue, in process `JobsTable.enqueueMany` only (parsed requests → committed) | {cell(c)} jobs/s | – | – | – | |")
    s = [r["sql_jobs_per_s"] for r in enq]
    w(f"| SQL `courier.enqueue` in a loop, one call per transaction | {cell(s)} jobs/s | – | – | – | |")
w("")

# ------------------------------------------------------------------ machine
w("## Machine and noise")
w("")
w("| item | value |")
w("|---|---|")
for key in ("host:", "cpus:", "mem:", "postgres:", "pgbench:", "nginx:", "wrk:", "python:", "swift:",
            "loadavg at start:", "loadavg at end:", "pg_test_fsync at start:", "pg_test_fsync at end:"):
    w(f"| {key.rstrip(':')} | {env_value(key)} |")
settings = [line[3:] for line in env.splitlines() if line.startswith("pg ")]
w(f"| PostgreSQL settings | {'; '.join(settings)} |")
peers = [line for line in env.splitlines() if "==" in line]
w(f"| peers | {', '.join(peers)} |")
w("")

# vmstat summary per phase
vm = []
vpath = D / "vmstat.log"
if vpath.exists():
    lines = vpath.read_text().splitlines()
    names = None
    for line in lines:
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "r":
            names = parts[:-1]  # last is the time-zone label
            continue
        if names is None or not parts[0].isdigit():
            continue
        try:
            ts = datetime.fromisoformat(parts[-2] + "T" + parts[-1])
        except ValueError:
            continue
        vm.append((ts, dict(zip(names, map(int, parts[:len(names)])))))
phases = []
ppath = D / "phases.log"
if ppath.exists():
    for line in ppath.read_text().splitlines():
        parts = line.split(" ", 2)
        if len(parts) == 3:
            phases.append((datetime.fromisoformat(parts[1].rstrip("Z")), parts[2]))


def vm_summary(samples):
    if not samples:
        return None
    keys = ("r", "us", "sy", "id", "wa", "st")
    return {k: statistics.mean(s.get(k, 0) for s in samples) for k in keys} | {"n": len(samples)}


if vm:
    w("`vmstat 1` over the whole run and per phase (means; `r` = runnable threads, cpu columns in %). "
      "The box has 2 cores shared with other work; `id` near 0 and `r` well above 2 mean the figures "
      "of that phase were squeezed by load.")
    w("")
    w("| phase | seconds | r | us | sy | id | wa | st |")
    w("|---|---|---|---|---|---|---|---|")
    allv = vm_summary([s for _, s in vm])
    w(f"| whole run | {allv['n']} | {allv['r']:.1f} | {allv['us']:.0f} | {allv['sy']:.0f} | {allv['id']:.0f} | {allv['wa']:.0f} | {allv['st']:.0f} |")
    groups = defaultdict(list)
    order = []
    for i, (start, name) in enumerate(phases):
        end = phases[i + 1][0] if i + 1 < len(phases) else datetime.max
        label = name.split(" rep ")[0]
        if label.endswith(" end") or label == "done":
            continue
        if label not in groups:
            order.append(label)
        groups[label] += [s for ts, s in vm if start <= ts < end]
    for label in order:
        v = vm_summary(groups[label])
        if v:
            w(f"| {label} | {v['n']} | {v['r']:.1f} | {v['us']:.0f} | {v['sy']:.0f} | {v['id']:.0f} | {v['wa']:.0f} | {v['st']:.0f} |")
    w("")

# ------------------------------------------------------------------ details
w("## No-op drain (issue 3)")
w("")
w("Method, Courier: N `noop` jobs inserted with one `insert ... select generate_series` and VACUUM ANALYZEd; "
  "the jobworker processes (`--queues bench --concurrency C`) start, register and sit idle, held off by a paused "
  "queue (`courier.queue_pause`; a baseline without queue pauses: a forced-open breaker row on the jobs' destination, "
  "which its claim skips); GO is one transaction that resumes the queue (or deletes that row) and sends "
  "the NOTIFY, t0 = its COMMIT returned. (Until 2026-12-02 the breaker row held every revision's workers; from "
  "migration 0022 on, the traffic keeper then held the waiting jobs while the workers started and released them in "
  "passes of 2,000 after GO, inside the timed drain, so drain figures measured before then understate Courier.) t1 = the first 5 ms poll that finds no job of the queue left in  t1 = the first 5 ms poll that finds no job of the queue left in "
  "`courier.jobs` (a job leaves it only when its success is committed). Method, PgQueuer (its harness, unchanged): "
  "jobs pre-enqueued and VACUUM ANALYZEd, workers spawned and READY, t0 = GO, end = the last worker's DONE after its "
  "drain-mode loop returned. CPU split = cores used on average between t0 and t1 (from /proc): workers, the private "
  "PostgreSQL's processes, and everything else on the box. Rows marked `--retention 0` ran the workers without the "
  "success archive (`courier.completed_jobs`): a success only deletes the job; the default keeps each success for 24 h.")
w("")
w("| who | configuration | jobs/s | CPU: workers / postgres / other / idle (cores) | worker peak RSS |")
w("|---|---|---|---|---|")
for (workers, conc), rs in sorted(noop.items()):
    cpu = rs[len(rs) // 2]["cpu"]
    w(f"| Courier | {workers} × jobworker --concurrency {conc} (N={rs[0]['n']:,}) | {cell([r['jobs_per_s'] for r in rs])} | "
      f"{cpu['workers_cores']} / {cpu['postgres_cores']} / {cpu['other_cores']} / {cpu['idle_cores']} | "
      f"{max(r['worker_peak_rss_kb'] for r in rs) / 1024:.1f} MB |")
for (workers, conc), rs in sorted(noop0.items()):
    cpu = rs[len(rs) // 2]["cpu"]
    w(f"| Courier | {workers} × jobworker --concurrency {conc} --retention 0 (N={rs[0]['n']:,}) | "
      f"{cell([r['jobs_per_s'] for r in rs])} | "
      f"{cpu['workers_cores']} / {cpu['postgres_cores']} / {cpu['other_cores']} / {cpu['idle_cores']} | "
      f"{max(r['worker_peak_rss_kb'] for r in rs) / 1024:.1f} MB |")
for (procs, qms, batch), rs in sorted(pgq_drain.items()):
    w(f"| PgQueuer | {procs} proc × {qms} QueueManager, batch_size={batch} (N={rs[0]['n']:,}) | "
      f"{cell([r['jobs_per_s'] for r in rs])} | – | – |")
w("")
w("### Raw-SQL limit: pgbench running Courier's own claim and ack statements")
w("")
pgbench_batch = next((r.get("batch") for r in courier if r["bench"] == "pgbench"), 100)
w("The script is generated at run time from `JobsTable.claimSQL` and `JobsTable.completeSQL` "
  f"(`bench/results/courier_claim_complete.sql`): the claim of {pgbench_batch} (`PGB_BATCH`, the worker's default claim batch) wrapped in a CTE "
  "that `\\gset`s the ids and attempts as arrays, then the acknowledgement binding them; each its own autocommit "
  f"transaction (2 commits per {pgbench_batch} jobs, as the worker). `pgbench -n -M prepared -c C -j min(C,2) -T T`, table refilled "
  "(VACUUM ANALYZE, CHECKPOINT) before every run; jobs/s = rows removed / T. The peers' minimal-schema script "
  "(`batch100_2tx`, their `run_pgbench.sh`) ran in the same run for reference.")
w("")
w(f"| script | clients | jobs/s | latency per script (ms; Courier {pgbench_batch} jobs, the peers 100) |")
w("|---|---|---|---|")
for (clients,), rs in sorted(pgbench_rows.items()):
    w(f"| Courier claimSQL + completeSQL | {clients} | {cell([r['jobs_per_s'] for r in rs])} | "
      f"{cell([r['latency_ms'] for r in rs], '{:.2f}')} |")
pb = D / "pgbench.csv"
if pb.exists():
    peer_pb = defaultdict(list)
    with pb.open() as f:
        for r in csv.DictReader(f):
            peer_pb[(r["script"], int(r["clients"]))].append(r)
    for (script, clients), rs in sorted(peer_pb.items()):
        w(f"| peers' minimal schema `{script}` | {clients} | {cell([float(r['jobs_per_s']) for r in rs])} | "
          f"{cell([float(r['lat_ms']) for r in rs], '{:.2f}')} |")
w("")

w("## HTTP drain (issue 3)")
w("")
w("Each job is one GET of `http://127.0.0.1:18080/ok` served by the peers' private nginx "
  "(`http/nginx.conf`: 1 worker, keep-alive). Courier: same method as the no-op drain, workers with "
  "`--allow-private-networks`; every job checked to have completed with status 200. PgQueuer + aiohttp: "
  "its harness (`bench_pgqueuer_http.py drain --client aiohttp --cpu`). With a baseline, its drain of "
  "each configuration runs right after this commit's (`bench/run.sh` alternates them per configuration).")
w("")
wrk = D / "wrk.log"
if wrk.exists():
    for line in wrk.read_text().splitlines():
        if line.startswith("Requests/sec"):
            w(f"nginx alone (`wrk -t1 -c32 -d5s`): {line.split(':')[1].strip()} requests/s.")
            w("")
w("| who | configuration | jobs/s | CPU: workers / postgres / other (nginx, kernel, rest of the box) / idle (cores) |")
w("|---|---|---|---|")
for (workers, conc), rs in sorted(http.items()):
    cpu = rs[len(rs) // 2]["cpu"]
    w(f"| Courier | {workers} × jobworker --concurrency {conc} (N={rs[0]['n']:,}) | {cell([r['jobs_per_s'] for r in rs])} | "
      f"{cpu['workers_cores']} / {cpu['postgres_cores']} / {cpu['other_cores']} / {cpu['idle_cores']} |")
for (procs, batch, maxt), rs in sorted(pgqh.items()):
    cpu = rs[len(rs) // 2].get("cpu_cores_avg", {})
    w(f"| PgQueuer + aiohttp | {procs} procs, batch_size={batch}, max_concurrent_tasks={maxt} (N={rs[0]['n']:,}) | "
      f"{cell([r['jobs_per_s'] for r in rs])} | {cpu.get('workers', '?')} / {cpu.get('postgres', '?')} / "
      f"{cpu.get('other', '?')} / – (pidstat) |")
w("")

w("## Pickup latency (issue 3)")
w("")
w("Courier: one idle jobworker (`--concurrency 32`); the bench process calls SQL `courier.enqueue` (one transaction "
  "each) every 20 ms; per job, from the moment COMMIT returned to the moment the loopback FaultServer in the same "
  "process had read the job's GET (CLOCK_MONOTONIC on both sides). Also shown from just before the enqueue call, which "
  "is what the peers harness measures. PgQueuer: its harness (`bench_pgqueuer.py latency`, 1 worker, defaults): "
  "`time.time()` before the enqueue call to the no-op handler's first line. With `LAT_AHEAD` (default 1,000), Courier "
  "and the baseline run once more with that many jobs scheduled a day ahead in the same queue (the table analyzed "
  "before the worker starts), as retries in backoff leave in a production queue; an empty queue is the one case "
  "where a claim need not pass over any.")
w("")
w("| who | measured | p50 ms | p90 ms | p99 ms | max ms |")
w("|---|---|---|---|---|---|")
def pickup_row(who: str, label: str, rs: list[dict], key: str) -> None:
    w(f"| {who} | {label} (n={rs[0]['n']}) | " + " | ".join(
        cell([r[key][p] for r in rs], "{:.2f}") for p in ("p50_ms", "p90_ms", "p99_ms", "max_ms")) + " |")


for label, key in (("commit → request read by server", "from_commit"), ("before enqueue call → request read", "from_enqueue_call"),
                   ("enqueue call + commit alone", "enqueue_commit_ms")):
    if lat:
        pickup_row("Courier", label, lat, key)
if lat_ahead:
    pickup_row(f"Courier, {ahead_label(lat_ahead)}", "commit → request read by server", lat_ahead, "from_commit")
if pgq_lat:
    w(f"| PgQueuer | before enqueue call → handler (n={pgq_lat[0]['n']}) | " + " | ".join(
        cell([r[p] for r in pgq_lat], "{:.2f}") for p in ("p50_ms", "p90_ms", "p99_ms", "max_ms")) + " |")
w("")

w("## Memory (issue 3)")
w("")
w("One jobworker at `--concurrency N`, N GET jobs to two loopback FaultServers (two ports, because libcurl allows 128 "
  "connections per host and port by default) that answer after a delay; RSS (VmRSS) sampled every 100 ms for 1.5 s "
  "once all N requests had reached the servers.")
w("")
w("| concurrency | requests in flight | idle RSS | RSS in flight | VmHWM | threads |")
w("|---|---|---|---|---|---|")
for r in mem:
    w(f"| {r['concurrency']} | {r['requests_in_flight']} | {r['idle_rss_kb'] / 1024:.1f} MB | {r['inflight_rss_kb'] / 1024:.1f} MB | "
      f"{r['hwm_kb'] / 1024:.1f} MB | {r['threads']} |")
w("")

w("## Enqueue (issue 2)")
w("")
if enq:
    w(f"{enq[0]['lines']:,} NDJSON lines (`{{\"url\": ..., \"body\": {{...}}, \"queue\": \"enq\"}}`): `jobctl enqueue --ndjson FILE` "
      "timed from process start to exit (it parses on both cores, then streams one COPY); the same file in process: "
      "parse + validate (`EnqueueRequest(jsonLine:)`, one thread), then `JobsTable.enqueueMany` (rows encoded on a "
      "second thread while they stream into one COPY straight into `courier.jobs`, one transaction). The lines using most "
      "fields are ~430 bytes: a PUT with a secret and two literal headers, a JSON body, `run_at`, `deadline`, `priority`, "
      "`max_attempts`, `timeout_ms` and `expect_content_type` (`EnqueueBench.richLine`). The unique-key lines are the "
      "webhook lines with a distinct `unique_key` each; they go through a staging table and `INSERT ... ON CONFLICT DO "
      "NOTHING` (`EnqueueBench.uniqueLine`). "
      f"SQL: `select courier.enqueue(url => $1, body => $2, queue => 'enq')` {enq[0]['sql_calls']:,} times on one "
      "connection, autocommit (each call waits for its commit's WAL flush).")
    w("")
    w("| path | jobs/s | seconds |")
    w("|---|---|---|")
    w(f"| jobctl enqueue --ndjson, end to end | {cell([r['jobctl_jobs_per_s'] for r in enq])} | {cell([r['jobctl_seconds'] for r in enq], '{:.2f}')} |")
    if any("jobctl_rich_jobs_per_s" in r for r in enq):
        w(f"| jobctl enqueue --ndjson, lines using most fields (see below), end to end | "
          f"{cell([r['jobctl_rich_jobs_per_s'] for r in enq if 'jobctl_rich_jobs_per_s' in r])} | "
          f"{cell([r['jobctl_rich_seconds'] for r in enq if 'jobctl_rich_seconds' in r], '{:.2f}')} |")
    if any("jobctl_unique_jobs_per_s" in r for r in enq):
        w(f"| jobctl enqueue --ndjson, webhook lines each with a unique_key, end to end | "
          f"{cell([r['jobctl_unique_jobs_per_s'] for r in enq if 'jobctl_unique_jobs_per_s' in r])} | "
          f"{cell([r['jobctl_unique_seconds'] for r in enq if 'jobctl_unique_seconds' in r], '{:.2f}')} |")
    w(f"| in process: parse + validate | {cell([r['lines'] / r['parse_seconds'] for r in enq])} | {cell([r['parse_seconds'] for r in enq], '{:.2f}')} |")
    w(f"| in process: enqueueMany (COPY, commit) | {cell([r['copy_jobs_per_s'] for r in enq])} | {cell([r['copy_seconds'] for r in enq], '{:.2f}')} |")
    w(f"| in process: both | {cell([r['inprocess_jobs_per_s'] for r in enq])} | – |")
    w(f"| SQL courier.enqueue loop | {cell([r['sql_jobs_per_s'] for r in enq])} | {cell([r['sql_seconds'] for r in enq], '{:.2f}')} |")
    if pgq_enq:
        w(f"| PgQueuer `Queries.enqueue`, chunks of 1000 (its harness) | {cell([r['jobs_per_s'] for r in pgq_enq])} | – |")
    w("")

# ------------------------------------------------------------------ single-job enqueue under concurrency (issue 12)
enqc = [r for r in courier if r["bench"] == "enqconc"]
if enqc:
    variants = (("current", "courier.enqueue (NOTIFY once per transaction and queue, 0023)"),
                ("every", "a copy notifying on every call (before 0023)"), ("quiet", "a copy without NOTIFY"))
    w("## Single-job enqueue under concurrency (issue 12)")
    w("")
    w("`bench/enqueue-concurrency.sh`, on a PostgreSQL of its own: `select courier.enqueue(url => ..., queue => 'enq')` "
      "from C pgbench clients (prepared, one call per autocommit transaction), against two copies of the function in "
      "schemas of the bench database only: one that notifies on every call, as before migration 0023, and one that never "
      "does (the floor; without NOTIFY, a worker finds jobs only by polling). One idle jobworker listens on another queue. "
      "Then pickup: one jobworker --concurrency 256 drains while pgbench offers a fixed rate; latency = enqueue "
      "transaction start → success archived (`created_at` → `finished_at`).")
    w("")
    w("| clients | " + " | ".join(f"{label}: jobs/s" for _, label in variants) + " |")
    w("|---|" + "---|" * len(variants))
    for c in sorted({r["clients"] for r in enqc}):
        cells = [cell([r["jobs_per_s"] for r in enqc if r["phase"] == "throughput" and r["clients"] == c and r["variant"] == v])
                 for v, _ in variants]
        w(f"| {c} | " + " | ".join(cells) + " |")
    pickup = [r for r in enqc if r["phase"] == "pickup"]
    if pickup:
        w("")
        w(f"Pickup at {pickup[0]['rate']} jobs/s offered, ms p50 / p99 (jobs archived):")
        w("")
        w("| clients | " + " | ".join(label for _, label in variants) + " |")
        w("|---|" + "---|" * len(variants))
        for c in sorted({r["clients"] for r in pickup}):
            cells = []
            for v, _ in variants:
                rs = [r for r in pickup if r["clients"] == c and r["variant"] == v]
                cells.append(f"{cell([r['p50_ms'] for r in rs], '{:.1f}')} / {cell([r['p99_ms'] for r in rs], '{:.1f}')} "
                             f"({cell([r['n'] for r in rs])})" if rs else "–")
            w(f"| {c} | " + " | ".join(cells) + " |")
    w("")

# ------------------------------------------------------------------ destination traffic control (issue 13)
traffic = [r for r in courier if r["bench"] == "traffic"]
if traffic:
    plain = [r for r in traffic if r["scenario"] == "no_policies"]
    capped = [r for r in traffic if r["scenario"] == "capped_backlog"]
    w("## Destination traffic control: the claim's cost")
    w("")
    w(f"One connection drains {traffic[0]['jobs']:,} runnable no-op jobs as a worker's claimer does (batches of 100, "
      "acknowledged without the archive): with no policies, then with "
      f"{capped[0]['capped_destinations'] if capped else 0} capped destinations each holding "
      f"{capped[0]['waiting_per_destination'] if capped else 0:,} waiting jobs at a full cap, in the same run "
      "(`courier-bench traffic`). Medians [min .. max].")
    w("")
    w("| scenario | jobs/s | µs per claim round | µs in the gated claim |")
    w("|---|---|---|---|")
    for name, group in [("no policies", plain), ("capped backlogs", capped)]:
        if group:
            w(f"| {name} | {cell([r['jobs_per_second'] for r in group])} | {cell([r['us_per_claim_round'] for r in group])} | "
              f"{cell([r['us_gated_claim'] for r in group])} |")
    w("")

# ------------------------------------------------------------------ scale and endurance (issue 12)
def fmt(x, spec="{:,.0f}"):
    return "–" if x is None or x != x else spec.format(x)


if longtx:
    free = [r["jobs_per_s"] for r in longtx if not r.get("held_snapshot")]
    held = [r["jobs_per_s"] for r in longtx if r.get("held_snapshot")]
    r0 = longtx[0]
    w("## Long transaction elsewhere in the database (issue 12)")
    w("")
    w(f"The no-op drain ({r0['n']:,} jobs, {r0['workers']} × jobworker --concurrency {r0['concurrency']}, default archive), "
      "unimpeded and with a second session holding a repeatable-read transaction open across it (`drain --hold-snapshot 1`: "
      "BEGIN ISOLATION LEVEL REPEATABLE READ and one read, taken after the workers are ready and before GO, committed after "
      "the drain), interleaved by repetition (`ONLY=longtx`). While it is open the xmin horizon stands still, so no dead job "
      "version can be removed.")
    w("")
    w("| drain | jobs/s | postgres CPU s per 100k jobs |")
    w("|---|---|---|")
    w(f"| unimpeded | {cell(free)} | {cell([r['postgres_cpu_s_per_100k'] for r in longtx if not r.get('held_snapshot')], '{:.2f}')} |")
    w(f"| repeatable-read transaction held open | {cell(held)} | {cell([r['postgres_cpu_s_per_100k'] for r in longtx if r.get('held_snapshot')], '{:.2f}')} |")
    w("")
    w(f"Held / unimpeded: {ratio(med(held), med(free)):.0%} (aim ≥ 70%: {verdict(ratio(med(held), med(free)) >= 0.7)}).")
    w("")

traced = [r for r in courier if r["bench"] == "drain" and r.get("tag") in ("trace-off", "trace-on")]
if traced:
    r0 = traced[0]
    w("## Tracing (issue 44)")
    w("")
    w(f"The drains ({r0['n']:,} jobs, {r0['workers']} × jobworker --concurrency {r0['concurrency']}) with every attempt's span "
      "exported (`OTEL_TRACES_SAMPLER=always_on`) over OTLP/HTTP to a loopback sink (bench/otlp_sink.py), against tracing off, "
      "interleaved by repetition (`ONLY=tracing`).")
    w("")
    base_traced = [r for r in rows("courier-baseline.jsonl") if r["bench"] == "drain" and r.get("tag") == "trace-off"]
    w("| drain | off, jobs/s | traced at 100%, jobs/s | traced / off | worker CPU s per 100k jobs, off → traced | baseline (untraced build), jobs/s | off / baseline |")
    w("|---|---|---|---|---|---|---|")
    for kind in ("noop", "http"):
        off_rows = [r for r in traced if r["kind"] == kind and r["tag"] == "trace-off"]
        on_rows = [r for r in traced if r["kind"] == kind and r["tag"] == "trace-on"]
        off, on = [r["jobs_per_s"] for r in off_rows], [r["jobs_per_s"] for r in on_rows]
        cpu_off = [r["worker_cpu_s_per_100k"] for r in off_rows if "worker_cpu_s_per_100k" in r]
        cpu_on = [r["worker_cpu_s_per_100k"] for r in on_rows if "worker_cpu_s_per_100k" in r]
        base = [r["jobs_per_s"] for r in base_traced if r["kind"] == kind]
        if off or on:
            cpu = f"{cell(cpu_off, '{:.2f}')} → {cell(cpu_on, '{:.2f}')}" if cpu_off and cpu_on else "–"
            vs_base = f"{ratio(med(off), med(base)):.2f}×" if base else "–"
            w(f"| {kind} | {cell(off)} | {cell(on)} | {ratio(med(on), med(off)):.0%} | {cpu} | {cell(base) if base else '–'} | {vs_base} |")
    w("")
    w("Aim: at most 10% slower at 100% sampling, and unchanged when off.")
    w("")

backlog = [r for r in courier if r["bench"] == "backlog"]
if backlog:
    empty = [r for r in backlog if r["scenario"] == "empty"]
    full = [r for r in backlog if r["scenario"] == "backlog"]
    w("## Backlog: draining runnable jobs behind millions of waiting ones (issue 12)")
    w("")
    b0 = (full or empty)[0]
    w(f"{b0['runnable']:,} runnable no-op jobs drained by {b0['workers']} × jobworker --concurrency {b0['concurrency']}, "
      f"first on an otherwise empty table, then with {b0.get('scheduled', 0):,} jobs of the same queue scheduled a day "
      f"ahead and {b0.get('held', 0):,} held behind a forced-open breaker (`courier-bench backlog`). Jobs loaded with COPY "
      f"over {b0['loaders']} connections, then VACUUM ANALYZE; the queue is paused while loading and the workers start; "
      "GO unpauses it; the end is the first 5 ms poll that finds none of the runnable jobs left in `courier.jobs` (they are loaded last, one id range; each poll probes the primary key from the lowest id the previous one found).")
    w("")
    w("| table | waiting | jobs/s | setup: load s | setup: vacuum s | postgres CPU s per 100k |")
    w("|---|---|---|---|---|---|")
    for name, group in (("empty", empty), ("with backlog", full)):
        if group:
            w(f"| {name} | {group[0]['scheduled'] + group[0]['held']:,} | {cell([r['jobs_per_s'] for r in group])} | "
              f"{cell([r['load_seconds'] for r in group], '{:.1f}')} | {cell([r['vacuum_seconds'] for r in group], '{:.1f}')} | "
              f"{cell([r['postgres_cpu_s_per_100k'] for r in group], '{:.2f}')} |")
    w("")
    if empty and full:
        q = ratio(med([r["jobs_per_s"] for r in full]), med([r["jobs_per_s"] for r in empty]))
        w(f"With backlog / empty: {q:.0%} (aim ≥ 90%: {verdict(q >= 0.9)}).")
        w("")

outage = [r for r in courier if r["bench"] == "outage"]
for r in outage:
    w("## Outage at scale (issue 12)")
    w("")
    w(f"{r['waiting']:,} waiting jobs of one destination whose breaker is forced open (as `jobctl breaker open`), open "
      f"{r['open_seconds']} s, then reset (closed), while {r['workers']} × jobworker --concurrency {r['concurrency']} "
      f"--lease {r['lease']} run {r['other_rate']} GETs/s to two other loopback destinations answered after "
      f"{r['other_delay_ms']} ms (`courier-bench outage`). Heartbeat delay: the gaps between a worker's successive "
      "`courier.workers.heartbeat_at` values (polled every 50 ms) less its heartbeat interval. Lease losses: the other "
      "destinations' jobs archived with attempt > 1, and dead letters. Hold and release: from the open (workers start) "
      "until no waiting job of the destination is unheld, and from the close until none is held (bounded probes of "
      "partial indexes).")
    w("")
    w("| worker | heartbeats | interval ms | delay p99 ms | delay max ms |")
    w("|---|---|---|---|---|")
    for h in r["heartbeat"]:
        w(f"| {h['worker']} | {h['heartbeats']} | {h['interval_ms']} | {fmt(h['delay_p99_ms'], '{:.0f}')} | {fmt(h['delay_max_ms'], '{:.0f}')} |")
    w("")
    w("| figure | value | aim |")
    w("|---|---|---|")
    w(f"| holding {r['waiting']:,} jobs took | {fmt(r['hold_seconds'], '{:.1f}')} s | |")
    w(f"| releasing them took | {fmt(r['release_seconds'], '{:.1f}')} s | |")
    w(f"| the released backlog ran in (from the close) | {fmt(r['backlog_ran_seconds'], '{:.1f}')} s | |")
    w(f"| other destinations: jobs done | {r['other_done']:,} | |")
    w(f"| other destinations: lease losses (attempt > 1) | {r['other_attempt_gt1']} | 0: {verdict(r['other_attempt_gt1'] == 0)} |")
    w(f"| dead letters | {r['other_dead']} | 0 |")
    w("")

soak = [r for r in courier if r["bench"] == "soak" and not r.get("label")]
if soak:
    s0 = soak[0]
    w("## Soak (issue 12)")
    w("")
    w(f"Steady enqueue at {s0['rate_target']:,} no-op jobs/s (ten inserts a second) drained by {s0['workers']} × jobworker "
      f"--concurrency {s0['concurrency']} --retention {s0['retention']} for {len(soak)} samples of ~{s0['seconds']:.0f} s "
      "(`courier-bench soak`). Throughput = rows archived per second (the archive's inserts, pg_stat_user_tables; every job succeeds); claim lag = age "
      "of the next job the claim would take (one probe of the claim index's head); latency = enqueue → finished of the jobs "
      "archived in the last second (one range of the archive's finished_at index); sizes from pg_relation_size / "
      "pg_indexes_size (KiB); dead tuples and autovacuum runs from pg_stat_user_tables. The polling scans no table.")
    w("")
    w("| sample | drained/s | claim lag s | latency p50 ms | latency p99 ms | jobs heap | jobs indexes | archive heap | archive indexes | dead (jobs) | dead (archive) | autovacuum jobs / archive |")
    w("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in soak:
        w(f"| {r['interval']} | {r['drained_per_s']:,.0f} | {r['claim_lag_s']:.3f} | {fmt(r.get('latency_p50_ms'), '{:.1f}')} | "
          f"{fmt(r.get('latency_p99_ms'), '{:.1f}')} | {r['jobs_heap_kb']:,} | {r['jobs_indexes_kb']:,} | {r['archive_heap_kb']:,} | "
          f"{r['archive_indexes_kb']:,} | {r['dead_tuples_jobs']:,} | {r['dead_tuples_archive']:,} | "
          f"{r['autovacuum_jobs']} / {r['autovacuum_archive']} |")
    w("")
    n = max(1, min(5, len(soak) // 2))
    first = statistics.mean(r["drained_per_s"] for r in soak[:n])
    last = statistics.mean(r["drained_per_s"] for r in soak[-n:])
    w(f"Last {n} samples / first {n}: {ratio(last, first):.1%} (aim ≥ 95%: {verdict(ratio(last, first) >= 0.95)}).")
    if "index_kb" in soak[-1]:
        w("")
        w("Each index at the first and last sample (KiB): " + ", ".join(
            f"`{k}` {soak[0]['index_kb'].get(k, 0):,} → {v:,}" for k, v in sorted(soak[-1]["index_kb"].items())) + ".")
    w("")

# ------------------------------------------------------------------ a held snapshot (issue 45)
free = [r for r in courier if r["bench"] == "soak" and r.get("label") == "unimpeded"]
held = [r for r in courier if r["bench"] == "soak" and r.get("label") == "held"]
if held:
    h0 = held[0]
    hold_s = h0["hold_snapshot_s"]

    def jobs_kb(r):
        return r["jobs_heap_kb"] + r["jobs_indexes_kb"]

    w("## A held snapshot (issue 45)")
    w("")
    w(f"The soak at {h0['rate_target']:,} no-op jobs/s, {h0['workers']} × jobworker --concurrency {h0['concurrency']} "
      f"--retention {h0['retention']}: first {len(free)} samples unimpeded, then {len(held)} with a repeatable-read "
      f"transaction in the same database that took its snapshot before the first job and held it {hold_s // 60} min "
      "(`courier-bench soak --hold-snapshot-seconds`), then released. Drained/s = rows archived per second; latency = "
      "enqueue → finished of the jobs archived in the last second; jobs = courier.jobs' partitions, heap + indexes (KiB).")
    w("")
    w("| sample | snapshot | drained/s | claim lag s | latency p50 ms | latency p99 ms | jobs heap | jobs indexes | "
      "archive heap | archive indexes | dead (jobs) | dead (archive) |")
    w("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for label, run in (("unimpeded", free), ("held", held)):
        for r in run:
            state = "held" if r.get("snapshot_held") else ("-" if label == "unimpeded" else "released")
            w(f"| {label} {r['interval']} | {state} | {r['drained_per_s']:,.0f} | {r['claim_lag_s']:.3f} | "
              f"{fmt(r.get('latency_p50_ms'), '{:.1f}')} | {fmt(r.get('latency_p99_ms'), '{:.1f}')} | {r['jobs_heap_kb']:,} | "
              f"{r['jobs_indexes_kb']:,} | {r['archive_heap_kb']:,} | {r['archive_indexes_kb']:,} | {r['dead_tuples_jobs']:,} | "
              f"{r['dead_tuples_archive']:,} |")
    w("")
    if free:
        during = [r for r in held if r.get("snapshot_held")]
        after = [r for r in held if not r.get("snapshot_held") and r["interval"] * r["seconds"] > hold_s + 300]
        free_p99 = statistics.median(r["latency_p99_ms"] for r in free if r.get("latency_p99_ms") is not None)
        free_kb = max(jobs_kb(r) for r in free)
        rate = h0["rate_target"]
        w("| aim | measured | verdict |")
        w("|---|---|---|")
        if during:
            low = min(r["drained_per_s"] for r in during[1:] or during)
            w(f"| drained/s while held stays at the offered {rate:,} (every sample after the first ≥ 95%) | lowest {low:,.0f} | "
              f"{verdict(low >= 0.95 * rate)} |")
            top = max(r["latency_p99_ms"] for r in during if r.get("latency_p99_ms") is not None)
            w(f"| latency p99 while held ≤ 2 × unimpeded ({free_p99:.1f} ms) + 20 ms | highest {top:.1f} ms | "
              f"{verdict(top <= 2 * free_p99 + 20)} |")
            big = max(jobs_kb(r) for r in during)
            w(f"| courier.jobs with its indexes while held ≤ 2 × unimpeded ({free_kb:,} KiB) | largest {big:,} KiB | "
              f"{verdict(big <= 2 * free_kb)} |")
        if after:
            top = max(r["latency_p99_ms"] for r in after if r.get("latency_p99_ms") is not None)
            big = max(jobs_kb(r) for r in after)
            w(f"| from 5 min after the release: back to unimpeded (p99 ≤ 1.5 × {free_p99:.1f} + 5 ms, jobs ≤ 1.5 × "
              f"{free_kb:,} KiB) | p99 {top:.1f} ms, jobs {big:,} KiB | {verdict(top <= 1.5 * free_p99 + 5 and big <= 1.5 * free_kb)} |")
        w("")

# ------------------------------------------------------------------ fair claiming (issue 13, item 4)
fair = [r for r in courier if r["bench"] == "fair"]
if fair:
    base_fair = [r for r in rows("courier-baseline.jsonl") if r["bench"] == "fair"]
    w("## Fair claiming: a trickle behind another destination's backlog (issue 13)")
    w("")
    w(f"{fair[0]['backlog']:,} GETs of one loopback receiver inserted first (one statement), drained by one jobworker "
      f"--concurrency {fair[0]['concurrency']}; meanwhile {fair[0]['n']} single enqueues of a second receiver, "
      f"{fair[0]['interval_ms']} ms apart, neither destination with a policy (`courier-bench fair`). Pickup = the "
      "trickle job's COMMIT returning → its request read by its receiver (both CLOCK_MONOTONIC); backlog served = "
      "backlog requests the first receiver had read when the trickle's last one arrived. With a baseline, the same "
      "with its worker on its own database.")
    w("")
    w("| worker | trickle pickup p50 ms | p99 ms | max ms | backlog jobs served meanwhile |")
    w("|---|---|---|---|---|")
    for label, rs in (("this commit", fair), ("baseline", base_fair)):
        if rs:
            w(f"| {label} | {cell([r['pickup_p50_ms'] for r in rs], '{:,.1f}')} | {cell([r['pickup_p99_ms'] for r in rs], '{:,.1f}')} "
              f"| {cell([r['pickup_max_ms'] for r in rs], '{:,.1f}')} | {cell([r['backlog_served'] for r in rs])} |")
    w("")

# ------------------------------------------------------------------ fairness keys (issue 42)
tenants = [r for r in courier if r["bench"] == "tenants"]
tenant_keys = [r for r in courier if r["bench"] == "drain" and r.get("tag") == "tenant-keys"]
if tenants or tenant_keys:
    w("## Fairness keys: a trickle behind one tenant's flood, weighted shares, the claim with many keys (issue 42)")
    w("")
    trickle = [r for r in tenants if r["scenario"] == "trickle"]
    noisy = [r for r in tenants if r["scenario"] == "noisy"]
    if trickle or noisy:
        r0 = (noisy or trickle)[0]
        w(f"{r0['trickle_keys']} fairness keys each enqueue one GET a second (`courier.enqueue(..., fairness_key =>)`, "
          f"{r0['n']:,} in all, one every {1000 / r0['trickle_keys']:.0f} ms in turn) to a loopback receiver, drained by "
          f"{r0['workers']} jobworkers --concurrency {r0['concurrency']}: on an empty queue, and while one key's flood "
          + ((f"of {noisy[0]['flood']:,} no-op jobs (inserted at once, one statement; claimed by the same fair claim as the trickle) "
              if noisy[0].get("flood_kind", "http") == "noop" else
              f"of {noisy[0]['flood']:,} GETs of the same receiver (one destination for every key, inserted at once) ") if noisy else "")
          + "drains (`courier-bench tenants`). Pickup = the trickle job's COMMIT returning → its request read by the "
          "receiver. Aim: p99 behind the flood within 2× of the empty queue's plus 10 ms. No peer has fairness keys.")
        w("")
        w("| trickle | pickup p50 ms | p99 ms | max ms | flood jobs/s meanwhile |")
        w("|---|---|---|---|---|")
        for label, rs in (("on an empty queue", trickle), ("behind the flood", noisy)):
            if rs:
                flood = cell([r["flood_jobs_per_s"] for r in rs]) if "flood_jobs_per_s" in rs[0] else "–"
                if rs and "flood_outlasted_trickle" in rs[0] and not all(r["flood_outlasted_trickle"] for r in rs):
                    flood += " (the flood ran out before the trickle ended)"
                w(f"| {label} | {cell([r['pickup_p50_ms'] for r in rs], '{:,.1f}')} | {cell([r['pickup_p99_ms'] for r in rs], '{:,.1f}')} "
                  f"| {cell([r['pickup_max_ms'] for r in rs], '{:,.1f}')} | {flood} |")
        if trickle and noisy:
            empty99 = med([r["pickup_p99_ms"] for r in trickle])
            behind99 = med([r["pickup_p99_ms"] for r in noisy])
            limit = 2 * empty99 + 10
            w("")
            w(f"p99 behind the flood {behind99:,.1f} ms against the aim's {limit:,.1f} ms (2 × {empty99:,.1f} + 10): "
              f"{verdict(behind99 <= limit)}.")
        w("")
    weighted = [r for r in tenants if r["scenario"] == "weighted"]
    if weighted:
        r0 = weighted[0]
        w(f"Keys w1, w2 and w4 with weights 1, 2 and 4 (`courier.tenant_set`), {r0['backlog_per_key']:,} GETs each answered "
          f"after {r0['delay_ms']} ms, so the fleet's slots ({r0['workers']} jobworkers --concurrency {r0['concurrency']}) "
          "are the bottleneck; each key's share of the starts in each minute from 5 s after GO, counted by the receiver. "
          "Aim: 14.3% / 28.6% / 57.1% within 5 points.")
        w("")
        w("| rep | minute | w1 | w2 | w4 | worst, points off | starts/s | every key backlogged |")
        w("|---|---|---|---|---|---|---|---|")
        for r in weighted:
            sh = r["shares_pct"]
            w(f"| {r['rep']} | {r['minute']} | {sh['w1']:.1f}% | {sh['w2']:.1f}% | {sh['w4']:.1f}% | {r['worst_points_off']:.1f} "
              f"| {r['starts_per_s']:,.0f} | {'yes' if r['every_key_backlogged'] else 'no'} |")
        worst = max(r["worst_points_off"] for r in weighted)
        w("")
        w(f"Worst minute {worst:.1f} points off: {verdict(worst <= 5 and all(r['every_key_backlogged'] for r in weighted))}.")
        w("")
    if tenant_keys:
        r0 = tenant_keys[0]
        w(f"The claim's cost with many keys: the no-op drain of {r0['n']:,} jobs, {r0['workers']} jobworkers --concurrency "
          f"{r0['concurrency']}, with its jobs spread over K fairness keys in turn (`courier-bench drain --fairness-keys K`; "
          "0 = no key, the plain claim), in the same repetitions.")
        w("")
        w("| fairness keys | jobs/s | worker CPU s / 100k jobs | PostgreSQL CPU s / 100k jobs | vs no key |")
        w("|---|---|---|---|---|")
        groups = by(tenant_keys, "fairness_keys")
        plain = [r["jobs_per_s"] for r in groups.get((None,), [])]
        for key in sorted(groups, key=lambda k: k[0] or 0):
            rs = groups[key]
            jps = [r["jobs_per_s"] for r in rs]
            w(f"| {key[0] or 0:,} | {cell(jps)} | {cell([r['worker_cpu_s_per_100k'] for r in rs], '{:.2f}')} "
              f"| {cell([r['postgres_cpu_s_per_100k'] for r in rs], '{:.2f}')} | {ratio(med(jps), med(plain)):.2f}× |")
        w("")

# ------------------------------------------------------------------ baseline (BASELINE=rev bench/run.sh)
baseline = rows("courier-baseline.jsonl")
if baseline:
    w(f"## Against the baseline ({env_value('baseline:')}), same run")
    w("")
    w("The same Courier measurements with the baseline revision's `jobworker`, interleaved by repetition "
      "(`BASELINE=<rev> bench/run.sh`), each revision on a database of its own migrated by its own `jobctl migrate` "
      "(`courier_bench_base` for the baseline). Medians [min .. max]; ratio = this commit / baseline. Issue 13's check "
      "is the no-op drain with no policies set: unchanged within noise.")
    w("")
    w("| measurement | this commit | baseline | ratio |")
    w("|---|---|---|---|")
    base_drain = [r for r in baseline if r["bench"] == "drain" and not r.get("tag")]
    for kind, label in (("noop", "no-op drain"), ("http", "HTTP drain")):
        now_groups = by([r for r in drain if r["kind"] == kind and archives(r)], "workers", "concurrency")
        base_groups = by([r for r in base_drain if r["kind"] == kind and archives(r)], "workers", "concurrency")
        for key in sorted(set(now_groups) & set(base_groups)):
            a = [r["jobs_per_s"] for r in now_groups[key]]
            b = [r["jobs_per_s"] for r in base_groups[key]]
            w(f"| {label}, {key[0]} worker(s), --concurrency {key[1]}, jobs/s | {cell(a)} | {cell(b)} | {ratio(med(a), med(b)):.2f}× |")
    base_lat, base_lat_ahead = split_latency(baseline)
    pairs = [(lat, base_lat, "empty queue")]
    if lat_ahead:
        pairs.append((lat_ahead, base_lat_ahead, ahead_label(lat_ahead)))
    for mine, theirs, where in pairs:
        if not (mine and theirs):
            continue
        for p in ("p50_ms", "p99_ms"):
            a = [r["from_commit"][p] for r in mine]
            b = [r["from_commit"][p] for r in theirs]
            w(f"| pickup latency {p[:-3]}, {where}, commit → request, ms | {cell(a, '{:.2f}')} | {cell(b, '{:.2f}')} | {ratio(med(a), med(b)):.2f}× |")
    base_traffic = [r for r in baseline if r["bench"] == "traffic"]
    for scenario, label in (("no_policies", "no policies"), ("capped_backlog", "capped backlogs")):
        a = [r["us_per_claim_round"] for r in traffic if r["scenario"] == scenario] if traffic else []
        b = [r["us_per_claim_round"] for r in base_traffic if r["scenario"] == scenario]
        if a and b:
            w(f"| traffic claim round ({label}), µs | {cell(a, '{:,.0f}')} | {cell(b, '{:,.0f}')} | {ratio(med(a), med(b)):.2f}× |")
    base_mem = [r for r in baseline if r["bench"] == "memory"]
    if mem and base_mem:
        a = [r["inflight_rss_kb"] / 1024 for r in mem]
        b = [r["inflight_rss_kb"] / 1024 for r in base_mem]
        w(f"| worker RSS with {mem[0]['concurrency']} requests in flight, MB | {cell(a, '{:.1f}')} | {cell(b, '{:.1f}')} | {ratio(med(a), med(b)):.2f}× |")
    w("")

# ------------------------------------------------------------------ earlier runs
# Earlier runs are not kept in the tree (run.sh overwrites this file and bench/results/);
# git holds them. The run before this one is the last commit whose bench/results/env.txt
# records another run's start.
def previous_run_commit() -> str | None:
    root = Path(__file__).resolve().parent.parent
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True,
                              text=True, check=True).stdout
    try:
        for sha in git("log", "--format=%h", "--", "bench/results/env.txt").split():
            started = [l for l in git("show", f"{sha}:bench/results/env.txt").splitlines()
                       if l.startswith("date:")]
            if started and started[0][len("date:"):].strip() != env_value("date:"):
                return sha
    except (OSError, subprocess.CalledProcessError):
        pass
    return None


# The last commit that held the dated archive of runs (RESULTS-*.md, results-*/), removed
# from the tree on 2026-12-06.
ARCHIVE_COMMIT = "86635c3"

w("## Earlier runs, and what was learned")
w("")
prev = previous_run_commit()
w((f"The run before this one: `git show {prev}:bench/RESULTS.md`, its raw rows in `{prev}:bench/results/`. "
   if prev else "") +
  "Earlier runs: `git log -- bench/RESULTS.md`. The dated archive of the runs before 2026-12-06T16:20Z "
  f"(`bench/RESULTS-*.md` and their `bench/results-*/` directories) was last in the tree at commit "
  f"{ARCHIVE_COMMIT} (`git show {ARCHIVE_COMMIT}:bench/` lists it). What the runs taught, and what was "
  "tried and dropped: [notes.md](notes.md). The latest table, how to reproduce it, and the dashboard's "
  "latency: [docs/performance.md](../docs/performance.md).")
w("")

print("\n".join(out))
