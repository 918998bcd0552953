#!/usr/bin/env python3
"""Splits single-job pickups into stages from a scheduler trace of the whole box.

Input: `perf script -F comm,tid,cpu,time,event,trace` of `perf record -a -e
sched:sched_switch,sched:sched_wakeup` taken while one jobworker picked up jobs one at a time
(`courier-bench latency`). Works for any worker build, whatever its threads are called: a
pickup is followed from thread to thread by who wakes whom.

  notification: another PostgreSQL backend wakes a worker thread (the listener) before the claim
                (a worker that listens on its claiming connection is not followed)
  claim sent:   a worker thread wakes the claim's backend (the backend that then waits on
                its commit's fsync, state D, before it wakes a worker thread with the reply)
  reply:        that backend wakes the claiming thread
  job, transport, receiver: the next worker threads woken, and the receiver (courier-bench)

Only pickups whose claim committed (an fsync) and that reach the receiver within 3 ms count.
Prints the median, quartiles and mean of each stage in microseconds. The trace adds a few
microseconds to each switch; compare builds traced alike, on the same box, interleaved.

  python3 bench/pickup_stages.py trace.txt [label]
"""
import re
import statistics
import sys
from collections import Counter

EVENT = re.compile(r"^\s*(.+?)\s+(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+sched:(sched_\w+):\s+(.*)$")
WAKEE = re.compile(r"comm=(.+?) pid=(\d+) prio")
SWITCH = re.compile(r"prev_comm=(.+?) prev_pid=(\d+) .*prev_state=(\S+) ==> next_comm=(.+?) next_pid=(\d+)")

STAGES = [
    "notification -> listener runs",
    "listener runs -> claimer woken",
    "claimer woken -> runs",
    "claimer runs -> claim sent",
    "backend: claim until its fsync",
    "backend: fsync -> reply",
    "reply -> claimer runs",
    "claimer -> job thread woken",
    "job thread woken -> runs",
    "job -> transport woken",
    "transport woken -> runs",
    "transport -> receiver woken",
    "total: notification -> receiver",
]


def is_worker(comm):
    # 08fec26 ran on the cooperative pool ("...default-qos"); later builds name their threads courier-*.
    return comm in ("jobworker", "oot.default-qos", "-qos.overcommit") or (
        comm.startswith("courier-") and comm != "courier-bench")


def read(path):
    """The events in order. A wake-up's `by` is the thread it was logged on; one logged by the idle
    task (it reached an idle CPU by interrupt) has as `waker` the thread running on the other CPU
    then, which the transport's identification uses (the box has two CPUs)."""
    events, names, running = [], {}, {}
    for line in open(path, errors="replace"):
        m = EVENT.match(line)
        if not m:
            continue
        comm, tid, cpu, t, kind, rest = m.groups()
        if kind == "sched_wakeup":
            w = WAKEE.search(rest)
            waker = tid
            if tid == "0":
                others = [who for c, (who, _) in running.items() if c != cpu and who != "0"]
                waker = others[0] if others else tid
            events.append(dict(t=float(t), kind="wake", by=tid, by_comm=comm, waker=waker, tid=w.group(2),
                               comm=w.group(1)))
            names[w.group(2)] = w.group(1)
        else:
            s = SWITCH.search(rest)
            events.append(dict(t=float(t), kind="switch", prev=s.group(2), prev_comm=s.group(1), state=s.group(3),
                               tid=s.group(5), comm=s.group(4)))
            names[s.group(2)], names[s.group(5)] = s.group(1), s.group(4)
            running[cpu] = (s.group(5), s.group(4))
    return events, {tid for tid, comm in names.items() if is_worker(comm)}


def either(index, fallback):
    return fallback if index is None else index


def pickups(events, workers):
    n = len(events)

    def woke(e, by=None, tid=None, tid_in=None):
        return e["kind"] == "wake" and (by is None or e["by"] == by) and (tid is None or e["tid"] == tid) \
            and (tid_in is None or e["tid"] in tid_in)

    def switched_in(start, tid, end=n):
        for k in range(start, end):
            if events[k]["kind"] == "switch" and events[k]["tid"] == tid:
                return k
        return None

    def last_before(end, start, pred):
        for k in range(end - 1, start - 1, -1):
            if pred(events[k]):
                return k
        return None

    # The claim's backend: of the backends that wait in state D, the one that wakes worker threads most.
    fsyncing = Counter(e["prev"] for e in events
                       if e["kind"] == "switch" and e["prev_comm"] == "postgres" and e["state"].startswith("D"))
    candidates = [pid for pid, _ in fsyncing.most_common(6)]
    if not candidates:
        return []
    backend = max(candidates, key=lambda pid: sum(1 for e in events if woke(e, by=pid, tid_in=workers)))
    rows = []
    for i, e in enumerate(events):
        if not woke(e, by=backend, tid_in=workers):
            continue
        claimer, t_reply = e["tid"], e["t"]
        sent = last_before(i, 0, lambda x: woke(x, tid=backend) and x["by"] in workers)
        if sent is None or not any(events[k]["kind"] == "switch" and events[k]["prev"] == backend
                                   and events[k]["state"].startswith("D") for k in range(sent, i)):
            continue
        fsync = next(k for k in range(sent, i) if events[k]["kind"] == "switch" and events[k]["prev"] == backend
                     and events[k]["state"].startswith("D"))
        notified = last_before(sent, 0, lambda x: x["kind"] == "wake" and x["by_comm"] == "postgres"
                               and x["by"] != backend and x["tid"] in workers)
        if notified is None or events[sent]["t"] - events[notified]["t"] > 0.003:
            continue
        listener = events[notified]["tid"]
        listener_runs = either(switched_in(notified, listener, sent), notified)
        claimer_woken = last_before(sent, listener_runs, lambda x: woke(x, tid=claimer))
        if claimer_woken is None:  # the listener claimed itself
            claimer_woken = claimer_runs = listener_runs
        else:
            claimer_runs = either(switched_in(claimer_woken, claimer, sent), claimer_woken)
        resumed = switched_in(i, claimer)
        if resumed is None:
            break
        received = next((k for k in range(resumed, n) if events[k]["kind"] == "wake"
                         and events[k]["comm"] == "courier-bench" and events[k]["by_comm"] != "postgres"), None)
        if received is None or events[received]["t"] - t_reply > 0.003:
            continue
        # The transport: the worker thread that woke the receiver, or else the last worker thread
        # to go to sleep before it.
        transport = events[received]["waker"] if events[received]["waker"] in workers else None
        if transport is None:
            k = last_before(received, resumed, lambda x: x["kind"] == "switch" and x["prev"] in workers
                            and x["state"].startswith("S"))
            transport = events[k]["prev"] if k is not None else claimer
        transport_woken = either(last_before(received, resumed, lambda x: woke(x, tid=transport)), received)
        transport_runs = either(switched_in(transport_woken, transport, received), transport_woken)
        job_woken = next((k for k in range(resumed, transport_woken) if woke(events[k], tid_in=workers)
                          and events[k]["tid"] not in (claimer, transport)), None)
        if job_woken is None:  # the job ran on the claimer's or the transport's thread
            job_woken = job_runs = transport_woken
        else:
            job_runs = either(switched_in(job_woken, events[job_woken]["tid"], transport_woken), job_woken)
        marks = [notified, listener_runs, claimer_woken, claimer_runs, sent, fsync, i, resumed, job_woken, job_runs,
                 transport_woken, transport_runs, received]
        times = [events[k]["t"] for k in marks]
        if all(a <= b for a, b in zip(times, times[1:])):
            rows.append([(b - a) * 1e6 for a, b in zip(times, times[1:])] + [(times[-1] - times[0]) * 1e6])
    return rows


def main():
    path = sys.argv[1]
    label = sys.argv[2] if len(sys.argv) > 2 else path
    rows = pickups(*read(path))
    print(f"{label}: {len(rows)} pickups (microseconds: median [p25 .. p75] mean)")
    if not rows:
        print("  no complete pickup found: was a jobworker picking up single jobs during the trace?")
        sys.exit(1)
    for index, name in enumerate(STAGES):
        values = sorted(row[index] for row in rows)
        q = lambda f: values[int(f * (len(values) - 1))]
        print(f"  {name:34} {statistics.median(values):6.0f} [{q(0.25):5.0f} .. {q(0.75):5.0f}] {statistics.mean(values):6.0f}")


if __name__ == "__main__":
    main()
