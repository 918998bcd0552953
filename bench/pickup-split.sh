#!/usr/bin/env bash
# Splits a pickup-latency gap against an older build into the schema's part and the worker's
# part: three sides, interleaved by repetition, on one private PostgreSQL:
#   A  the older build's jobworker on a database migrated by its own jobctl;
#   B  the older build's jobworker on a database migrated by this build's jobctl, after
#      $BASE_ON_HEAD_SQL (default: an index carrying 08fec26's runnable predicate, without
#      which 08fec26's claim cannot use today's jobs_runnable_idx and walks the table);
#   C  this build's jobworker on that same database;
#   D  (with CLAIM_BIN) the older build's jobworker with this build's claim statement (a build
#      of the older tree whose JobsTable.claimSQL calls courier.claim) on that same database.
# B against A is the schema's part (the older worker's own statements on today's tables);
# C against B is the worker's and its claim's; with D, D against B is the claim's and C
# against D the worker's (the runtime's) alone. Medians of `courier-bench latency` (commit →
# request at the receiver). bench/notes.md, "Pickup against 08fec26, split into schema and worker".
#
#   BASE_BIN=/tmp/courier-pre11/.build/release bench/pickup-split.sh
#
# Knobs: REPS [3]  LAT_N [1000]  SIDES ["A B C"]  PG_PORT [25490]  RUN_DIR [/tmp/courier-pickup-split]
#        HEAD_BIN [release build]  CLAIM_BIN [none; needed for side D]
#        TRACE=1: record each run's scheduler events (`perf`, as root) and print its pickups split
#        into stages, thread to thread (bench/pickup_stages.py); LAT_N=400 is enough for that.
# Needs the release build of this tree (jobctl, jobworker, courier-bench).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
BIN="${HEAD_BIN:-$(swift build -c release --show-bin-path)}"
: "${BASE_BIN:?set BASE_BIN to the bin directory of the older build}"
REPS="${REPS:-3}"; LAT_N="${LAT_N:-1000}"; PG_PORT="${PG_PORT:-25490}"; RUN_DIR="${RUN_DIR:-/tmp/courier-pickup-split}"
BASE_ON_HEAD_SQL="${BASE_ON_HEAD_SQL:-create index jobs_runnable_old_idx on courier.jobs (queue, priority, run_at, id) where state = 'available' and held_since is null}"
export COURIER_BENCH_METRICS_BASE="${COURIER_BENCH_METRICS_BASE:-19700}"
if [ -n "${TRACE:-}" ] && ! command -v perf >/dev/null; then
  echo "pickup-split: TRACE=1 needs perf (Debian: apt-get install linux-perf)" >&2; exit 2
fi
rm -rf "$RUN_DIR"; mkdir -p "$RUN_DIR/work"
"$BIN/jobctl" devdb start --dir "$RUN_DIR/pg" --port "$PG_PORT" >/dev/null
export PGHOST="$RUN_DIR/pg/run" PGPORT="$PG_PORT" PGUSER=courier PGDATABASE=postgres
trap '"$BIN/jobctl" devdb stop --dir "$RUN_DIR/pg" --port "$PG_PORT" >/dev/null 2>&1 || true' EXIT
common() { echo --db "$2" --bin-dir "$1" --work-dir "$RUN_DIR/work" --out "$RUN_DIR/$3.jsonl" --pg-data "$RUN_DIR/pg/data"; }
"$BIN/courier-bench" setup $(common "$BIN" courier_split_head C)
psql -qAtX -d courier_split_head -c "$BASE_ON_HEAD_SQL"
psql -qAtX -c "drop database if exists courier_split_base with (force)" -c "create database courier_split_base"
"$BASE_BIN/jobctl" migrate --database-url "dbname=courier_split_base" > "$RUN_DIR/work/base-migrate.log"
for rep in $(seq 1 "$REPS"); do
  for side in ${SIDES:-A B C}; do
    case $side in
      A) dir=$BASE_BIN; db=courier_split_base;;
      B) dir=$BASE_BIN; db=courier_split_head;;
      C) dir=$BIN; db=courier_split_head;;
      D) dir=${CLAIM_BIN:?side D needs CLAIM_BIN}; db=courier_split_head;;
    esac
    echo "## $(date -u +%T) rep $rep $side, load $(cut -d' ' -f1-3 /proc/loadavg)"
    # With TRACE, the scheduler's switches and wake-ups of the whole box, split into stages per pickup.
    trace=()
    [ -n "${TRACE:-}" ] && trace=(perf record -q -a -e sched:sched_switch,sched:sched_wakeup -o "$RUN_DIR/$side-$rep.perf" --)
    "${trace[@]}" "$BIN/courier-bench" latency $(common "$dir" "$db" "$side") --jobs "$LAT_N" --reps 1
    if [ -n "${TRACE:-}" ]; then
      perf script -i "$RUN_DIR/$side-$rep.perf" -F comm,tid,cpu,time,event,trace > "$RUN_DIR/$side-$rep.sched" 2>/dev/null
      python3 "$ROOT/bench/pickup_stages.py" "$RUN_DIR/$side-$rep.sched" "side $side, rep $rep"
    fi
  done
done
python3 - "$RUN_DIR" <<'PY'
import json, sys, statistics as st
for side, what in (("A", "older worker, its own schema"), ("B", "older worker, this schema"), ("C", "this worker, this schema"),
                  ("D", "older worker, this claim")):
    try: rs = [json.loads(line) for line in open(f"{sys.argv[1]}/{side}.jsonl") if '"latency"' in line]
    except FileNotFoundError: continue
    p50 = [r["from_commit"]["p50_ms"] for r in rs]; p99 = [r["from_commit"]["p99_ms"] for r in rs]
    print(f"{side} {what:30} p50 {st.median(p50):.3f} ms  p99 {st.median(p99):.3f} ms  runs {list(zip(p50, p99))}")
PY
