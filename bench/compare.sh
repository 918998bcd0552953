#!/usr/bin/env bash
# A quick same-run comparison of two jobworker builds on a loaded machine: no-op and
# HTTP drains (and optionally pickup latency), alternating A and B by repetition, with
# each drain's worker CPU seconds per 100k jobs, context switches per thread per 1000
# jobs, jobs per claim and results per acknowledgement flush (see WorkerCounters).
# Each side runs on a database of its own, migrated by its own jobctl.
# CPU per job is the figure to compare when other work shares the box; wall throughput
# moves with the load.
#
#   BASE_BIN=/tmp/courier-bench-baseline/.build/release bench/compare.sh
#
# Knobs: SIDES ["base head"]  REPS [3]  NOOP_N [30000]  HTTP_N [10000]  CONC [256]  WORKERS [1]  LAT_N [0: skipped]
#        LAT_AHEAD [0]: jobs scheduled a day ahead in the latency queue (courier-bench latency --scheduled-ahead)
#        PG_PORT [25480]  RUN_DIR [/tmp/courier-compare]  NGINX_PORT [18181]
#        ONLY ["noop http latency"]
# Needs the release build of this tree (jobctl, jobworker, courier-bench) and nginx.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
BIN="${HEAD_BIN:-$(swift build -c release --show-bin-path)}"
: "${BASE_BIN:?set BASE_BIN to the bin directory of the other build}"
REPS="${REPS:-3}"; NOOP_N="${NOOP_N:-30000}"; HTTP_N="${HTTP_N:-10000}"; CONC="${CONC:-256}"; WORKERS="${WORKERS:-1}"
LAT_N="${LAT_N:-0}"; LAT_AHEAD="${LAT_AHEAD:-0}"; PG_PORT="${PG_PORT:-25480}"; RUN_DIR="${RUN_DIR:-/tmp/courier-compare}"; NGINX_PORT="${NGINX_PORT:-18181}"
ONLY="${ONLY:-noop http latency}"
has() { [[ " $ONLY " == *" $1 "* ]]; }
export COURIER_BENCH_METRICS_BASE="${COURIER_BENCH_METRICS_BASE:-19600}"

rm -rf "$RUN_DIR"; mkdir -p "$RUN_DIR/work" "$RUN_DIR/nginx"
"$BIN/jobctl" devdb start --dir "$RUN_DIR/pg" --port "$PG_PORT" >/dev/null
export PGHOST="$RUN_DIR/pg/run" PGPORT="$PG_PORT" PGUSER=courier PGDATABASE=postgres
cat > "$RUN_DIR/nginx/nginx.conf" <<CONF
worker_processes 1;
pid $RUN_DIR/nginx/nginx.pid;
error_log $RUN_DIR/nginx/error.log warn;
daemon on;
events { worker_connections 4096; }
http {
  access_log off; default_type application/json;
  client_body_temp_path $RUN_DIR/nginx/cb; proxy_temp_path $RUN_DIR/nginx/px;
  fastcgi_temp_path $RUN_DIR/nginx/fc; uwsgi_temp_path $RUN_DIR/nginx/uw; scgi_temp_path $RUN_DIR/nginx/sc;
  keepalive_timeout 75s; keepalive_requests 1000000;
  server { listen 127.0.0.1:$NGINX_PORT; location /ok { return 200 '{"ok":true}'; } }
}
CONF
nginx -c "$RUN_DIR/nginx/nginx.conf" -p "$RUN_DIR/nginx/"
cleanup() {
  nginx -c "$RUN_DIR/nginx/nginx.conf" -p "$RUN_DIR/nginx/" -s quit 2>/dev/null || true
  [ "${KEEP_DB:-0}" = 1 ] || "$BIN/jobctl" devdb stop --dir "$RUN_DIR/pg" --port "$PG_PORT" >/dev/null 2>&1 || true
}
trap cleanup EXIT

CB="$BIN/courier-bench"
# Each side on a database of its own, migrated by its own jobctl: an older worker meets its own schema.
db_of() { if [ "$1" = base ]; then echo courier_bench_base; else echo courier_bench; fi; }
common() { echo --db "$(db_of "$2")" --bin-dir "$1" --work-dir "$RUN_DIR/work" --out "$RUN_DIR/$2.jsonl" --pg-data "$RUN_DIR/pg/data"; }
"$CB" setup $(common "$BIN" head)
psql -qAtX -d postgres -c "drop database if exists courier_bench_base with (force)" -c "create database courier_bench_base"
"$BASE_BIN/jobctl" migrate --database-url "dbname=courier_bench_base" > "$RUN_DIR/work/base-migrate.log"
for rep in $(seq 1 "$REPS"); do
  for side in ${SIDES:-base head}; do
    dir="$BIN"; [ "$side" = base ] && dir="$BASE_BIN"
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    echo "## $(date -u +%T) rep $rep $side, load $load"
    has noop && "$CB" drain $(common "$dir" "$side") --kind noop --jobs "$NOOP_N" --workers "$WORKERS" --concurrency "$CONC" --reps 1
    has http && "$CB" drain $(common "$dir" "$side") --kind http --url "http://127.0.0.1:$NGINX_PORT/ok" --jobs "$HTTP_N" \
      --workers "$WORKERS" --concurrency "$CONC" --reps 1
    if has latency && [ "$LAT_N" -gt 0 ]; then "$CB" latency $(common "$dir" "$side") --jobs "$LAT_N" --scheduled-ahead "$LAT_AHEAD" --reps 1; fi
  done
done
python3 - "$RUN_DIR" <<'PY'
import json, sys, statistics as st
run = sys.argv[1]
def rows(side):
    out = []
    try: lines = open(f"{run}/{side}.jsonl").readlines()
    except FileNotFoundError: return out
    for line in lines:
        r = json.loads(line); out.append(r)
    return out
def med(xs): return st.median(xs) if xs else float('nan')
for kind in ("noop", "http"):
    for side in ("base", "head"):
        rs = [r for r in rows(side) if r.get("bench") == "drain" and r.get("kind") == kind] or \
             [r for r in rows(side) if r.get("kind") == kind and "jobs_per_s" in r]
        if not rs: continue
        f = lambda k: med([r[k] for r in rs if k in r])
        print(f"{kind:5} {side}: jobs/s {f('jobs_per_s'):8.0f}  worker CPU s/100k {f('worker_cpu_s_per_100k'):6.2f}  "
              f"pg CPU s/100k {f('postgres_cpu_s_per_100k'):6.2f}  jobs/claim {f('jobs_per_claim'):6.1f}  acks/flush {f('acks_per_flush'):6.1f}  n={len(rs)}")
        print("       per-run worker CPU s/100k:", [r.get('worker_cpu_s_per_100k') for r in rs], " jobs/s:", [round(r['jobs_per_s']) for r in rs])
        sw = {}
        for r in rs:
            for k, v in r.get("switches_per_1k_jobs", {}).items(): sw.setdefault(k, []).append(v)
        print("       switches per 1k jobs:", {k: med(v) for k, v in sorted(sw.items())})
for side in ("base", "head"):
    rs = [r for r in rows(side) if r.get("bench") == "latency"]
    if rs:
        print(f"latency {side}: commit->request p50 {med([r['from_commit']['p50_ms'] for r in rs]):.2f} ms  "
              f"p99 {med([r['from_commit']['p99_ms'] for r in rs]):.2f} ms  per run:",
              [(r['from_commit']['p50_ms'], r['from_commit']['p99_ms']) for r in rs])
PY
