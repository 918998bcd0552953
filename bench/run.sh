#!/usr/bin/env bash
# Courier's benchmarks, with the peers harness (../shared/bench/peers) in the same run,
# on a private PostgreSQL with default durability. Writes bench/RESULTS.md and keeps the
# raw rows in bench/results/, replacing the previous run's: git keeps earlier runs, and
# RESULTS.md names the commit of the one before (bench/report.py).
#
#   bench/run.sh                 # the default set, ~30 min on the 2-core reference box
#   QUICK=1 bench/run.sh         # small sizes, 1 rep: checks the harness in ~4 min (figures not comparable)
#   ONLY="drain latency" bench/run.sh   # subset of: pgbench drain http latency memory enqueue enqconc traffic fair tenants
#                                         #   and soak backlog outage longtx (issue 12; not in the default set:
#                                         #   at full size they take ~30 + ~10 + ~15 + ~3 min)
#   ONLY="soak backlog outage longtx" bench/run.sh   # the scale and endurance runs alone
#   ONLY=held bench/run.sh       # issue 45: the soak with a repeatable-read snapshot held 30 min, then 10 min after,
#                                #   beside the same soak unimpeded (~50 min)
#   ONLY=tracing bench/run.sh    # issue 44: the no-op and HTTP drains traced at 100% to a loopback OTLP sink, against off
#
# Knobs (environment), defaults in brackets:
#   REPS [3]                 repetitions of every measurement (median reported)
#   DRAIN_REPS [REPS]        repetitions of the no-op drains alone (Courier, baseline and PgQueuer)
#   ENQC_CLIENTS ["1 8 32"]  ENQC_T [10]  ENQC_RATE [400]   enqconc: single-job courier.enqueue from concurrent clients
#                            (bench/enqueue-concurrency.sh, on a PostgreSQL of its own), against copies of it that
#                            notify on every call or never; then pickup at an offered rate
#   DRAIN_N [100000]         no-op jobs per drain (Courier and PgQueuer)
#   DRAIN_NOARCHIVE_CONC ["256,1024"]  --concurrency values of the drains with --retention 0 (no success archive)
#   DRAIN_WORKERS ["1,2"]    jobworker processes;  DRAIN_CONC ["64,256,1024"]  --concurrency values tried
#   PGQ_CONFIGS              PgQueuer drain configs "procs qms batch;..." ["2 1 500;2 2 250;1 1 500"]
#   HTTP_N [100000]          GET jobs per HTTP drain;  HTTP_WORKERS ["1,2"];  HTTP_CONC ["64,256"]
#   PGQ_HTTP_CONFIGS         PgQueuer+aiohttp "procs batch max_tasks;..." ["2 100 1000"] (its best in RESULTS.md)
#   LAT_N [500]  LAT_INTERVAL_MS [20]      pickup latency: single enqueues, this far apart
#   LAT_AHEAD [1000]         pickup latency once more (Courier and the baseline), with this many jobs scheduled a day
#                            ahead in the queue, as retries in backoff leave in a production queue (0: skipped)
#   MEM_CONC [256]  MEM_DELAY [10]         memory: in-flight slow requests, seconds each takes
#   TRAFFIC_JOBS [50000]  TRAFFIC_DESTINATIONS [100]  TRAFFIC_WAITING [10000]   traffic: claim cost
#   FAIR_BACKLOG [200000]  FAIR_N [100]  FAIR_INTERVAL_MS [100]   fair: a trickle's pickup behind a backlog
#   TENANT_REPS [1]  TENANT_FLOOD [1000000]  TENANT_TRICKLE_KEYS [50]  TENANT_TRICKLE_S [30]
#   TENANT_WEIGHTED_BACKLOG [200000]  TENANT_WEIGHTED_MINUTES [2]  TENANT_KEYS [10000]  TENANT_KEYS_N [200000]
#                            tenants (issue 42): 50 keys' trickle of 1 job/s each on an empty queue and behind one
#                            key's flood; keys weighted 1:2:4 under full load, shares per minute; the no-op drain
#                            with its jobs over 0, 1 and TENANT_KEYS fairness keys (the fair claim's cost)
#   ENQ_LINES [100000]  ENQ_SQL_CALLS [10000]   enqueue: NDJSON lines; courier.enqueue calls
#   PGB_CLIENTS ["1,2,4"]  PGB_T [5]  PGB_FILL [600000]  PGB_BATCH [the worker's default --claim-batch]
#                            raw-SQL limit (pgbench) clients, seconds, rows, jobs per claim
#   PEERS_PGB_REPS [1]       reps of the peers' minimal-schema pgbench (each refills 1.5M rows)
#   SOAK_MINUTES [30]  SOAK_RATE [auto]  SOAK_WORKERS [2]  SOAK_CONC [256]  SOAK_RETENTION [2m]  SOAK_SAMPLE [60]
#                            soak: steady enqueue at SOAK_RATE jobs/s (auto: half the best no-op drain of this run
#                            when ONLY has drain, else 8000, half of the 2-core box's ~16k) drained by SOAK_WORKERS, success archive kept
#                            SOAK_RETENTION (short, so pruning matters), one line of figures every SOAK_SAMPLE s
#   BACKLOG_RUNNABLE [1000000]  BACKLOG_WAITING [9000000]  BACKLOG_HELD_SHARE [0.5]  BACKLOG_WORKERS [2]
#   BACKLOG_CONC [256]  BACKLOG_LOADERS [2]   backlog: drain of the runnable jobs with the waiting ones (scheduled a
#                            day ahead, or held behind an open breaker: HELD_SHARE of them) against an empty table
#   OUTAGE_WAITING [1000000]  OUTAGE_MINUTES [10]  OUTAGE_WORKERS [2]  OUTAGE_CONC [256]  OUTAGE_OTHER_RATE [200]
#                            (OUTAGE_SECONDS, when set, overrides OUTAGE_MINUTES)
#   OUTAGE_OTHER_DELAY_MS [500]  OUTAGE_LEASE [10s]   outage: one destination's breaker open over its backlog while
#                            other destinations' GETs (loopback, answered after OTHER_DELAY_MS) flow at OTHER_RATE/s
#   HELD_RATE [2000]  HELD_MINUTES [30]  HELD_AFTER_MINUTES [10]  HELD_FREE_MINUTES [10]  HELD_WORKERS [2]
#   HELD_RETENTION [1m]  HELD_SAMPLE [60]   held: the soak at HELD_RATE jobs/s unimpeded for HELD_FREE_MINUTES,
#                            then again with a repeatable-read snapshot (taken before the first job) held for
#                            HELD_MINUTES and released for HELD_AFTER_MINUTES more; one line of figures every HELD_SAMPLE s
#   LONGTX_N [$DRAIN_N]  LONGTX_WORKERS [2]  LONGTX_CONC [256]   longtx: the no-op drain with a repeatable-read
#                            transaction held open across it, against the same drain unimpeded, interleaved
#   TRACE_N [$DRAIN_N]  TRACE_WORKERS [2]  TRACE_CONC [256]   tracing: the drains' size, workers and --concurrency
#   PG_PORT [25450]  RUN_DIR [/tmp/courier-bench-run]  PEERS_DIR [<repo>/../shared/bench/peers]
#   VENV [/tmp/peers-venv]   KEEP_DB=1 leaves the private PostgreSQL running afterwards
#   BASELINE [unset]         a git revision: its jobworker and jobctl are built too (in BASELINE_DIR
#                            [/tmp/courier-bench-baseline], a detached worktree), and the drains, HTTP drains,
#                            pickup latency, fair claiming and memory run once more with it, interleaved by repetition, so a
#                            change is compared with what came before in the same run. The baseline runs on a
#                            database of its own (courier_bench_base) migrated by the baseline's own jobctl, so
#                            the old worker meets its own schema, not this commit's
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"

QUICK="${QUICK:-0}"
if [ "$QUICK" = 1 ]; then
  : "${REPS:=1}" "${DRAIN_N:=20000}" "${HTTP_N:=10000}" "${LAT_N:=100}" "${MEM_DELAY:=4}" "${ENQ_LINES:=20000}"
  : "${ENQ_SQL_CALLS:=1000}" "${PGB_T:=2}" "${PGB_FILL:=200000}" "${DRAIN_CONC:=256}" "${HTTP_CONC:=256}"
  : "${DRAIN_NOARCHIVE_CONC:=256}"
  : "${PGQ_CONFIGS:=2 1 500}"
  : "${SOAK_MINUTES:=3}" "${SOAK_RATE:=5000}" "${SOAK_SAMPLE:=30}" "${BACKLOG_RUNNABLE:=100000}" "${BACKLOG_WAITING:=900000}"
  : "${OUTAGE_WAITING:=100000}" "${OUTAGE_MINUTES:=1}" "${ENQC_T:=3}" "${ENQC_CLIENTS:=1 8}"
  : "${TENANT_FLOOD:=200000}" "${TENANT_TRICKLE_S:=5}" "${TENANT_WEIGHTED_BACKLOG:=50000}" "${TENANT_WEIGHTED_MINUTES:=1}"
  : "${TENANT_KEYS:=1000}" "${TENANT_KEYS_N:=20000}"
fi
REPS="${REPS:-3}"
ONLY="${ONLY:-pgbench drain http latency memory enqueue enqconc traffic fair tenants}"
has() { [[ " $ONLY " == *" $1 "* ]]; }
DRAIN_REPS="${DRAIN_REPS:-$REPS}"
FAIR_BACKLOG="${FAIR_BACKLOG:-200000}"; FAIR_N="${FAIR_N:-100}"; FAIR_INTERVAL_MS="${FAIR_INTERVAL_MS:-100}"
TENANT_REPS="${TENANT_REPS:-1}"; TENANT_FLOOD="${TENANT_FLOOD:-1000000}"; TENANT_TRICKLE_KEYS="${TENANT_TRICKLE_KEYS:-50}"
TENANT_TRICKLE_S="${TENANT_TRICKLE_S:-30}"; TENANT_WEIGHTED_BACKLOG="${TENANT_WEIGHTED_BACKLOG:-200000}"
TENANT_WEIGHTED_MINUTES="${TENANT_WEIGHTED_MINUTES:-2}"; TENANT_KEYS="${TENANT_KEYS:-10000}"; TENANT_KEYS_N="${TENANT_KEYS_N:-200000}"
TRAFFIC_JOBS="${TRAFFIC_JOBS:-50000}"
TRAFFIC_DESTINATIONS="${TRAFFIC_DESTINATIONS:-100}"
TRAFFIC_WAITING="${TRAFFIC_WAITING:-10000}"
DRAIN_N="${DRAIN_N:-100000}"; DRAIN_WORKERS="${DRAIN_WORKERS:-1,2}"; DRAIN_CONC="${DRAIN_CONC:-64,256,1024}"
DRAIN_NOARCHIVE_CONC="${DRAIN_NOARCHIVE_CONC:-256,1024}"
PGQ_CONFIGS="${PGQ_CONFIGS:-2 1 500;2 2 250;1 1 500}"
HTTP_N="${HTTP_N:-100000}"; HTTP_WORKERS="${HTTP_WORKERS:-1,2}"; HTTP_CONC="${HTTP_CONC:-64,256}"
PGQ_HTTP_CONFIGS="${PGQ_HTTP_CONFIGS:-2 100 1000}"
LAT_N="${LAT_N:-500}"; LAT_INTERVAL_MS="${LAT_INTERVAL_MS:-20}"; LAT_AHEAD="${LAT_AHEAD:-1000}"
MEM_CONC="${MEM_CONC:-256}"; MEM_DELAY="${MEM_DELAY:-10}"
ENQ_LINES="${ENQ_LINES:-100000}"; ENQ_SQL_CALLS="${ENQ_SQL_CALLS:-10000}"
PGB_CLIENTS="${PGB_CLIENTS:-1,2,4}"; PGB_T="${PGB_T:-5}"; PGB_FILL="${PGB_FILL:-600000}"
SOAK_MINUTES="${SOAK_MINUTES:-30}"; SOAK_RATE="${SOAK_RATE:-auto}"; SOAK_WORKERS="${SOAK_WORKERS:-2}"; SOAK_CONC="${SOAK_CONC:-256}"
SOAK_RETENTION="${SOAK_RETENTION:-2m}"; SOAK_SAMPLE="${SOAK_SAMPLE:-60}"
HELD_RATE="${HELD_RATE:-2000}"; HELD_MINUTES="${HELD_MINUTES:-30}"; HELD_AFTER_MINUTES="${HELD_AFTER_MINUTES:-10}"
HELD_FREE_MINUTES="${HELD_FREE_MINUTES:-10}"; HELD_WORKERS="${HELD_WORKERS:-2}"; HELD_RETENTION="${HELD_RETENTION:-1m}"
HELD_SAMPLE="${HELD_SAMPLE:-60}"
BACKLOG_RUNNABLE="${BACKLOG_RUNNABLE:-1000000}"; BACKLOG_WAITING="${BACKLOG_WAITING:-9000000}"; BACKLOG_HELD_SHARE="${BACKLOG_HELD_SHARE:-0.5}"
BACKLOG_WORKERS="${BACKLOG_WORKERS:-2}"; BACKLOG_CONC="${BACKLOG_CONC:-256}"; BACKLOG_LOADERS="${BACKLOG_LOADERS:-2}"
OUTAGE_WAITING="${OUTAGE_WAITING:-1000000}"; OUTAGE_MINUTES="${OUTAGE_MINUTES:-10}"; OUTAGE_WORKERS="${OUTAGE_WORKERS:-2}"
OUTAGE_CONC="${OUTAGE_CONC:-256}"; OUTAGE_OTHER_RATE="${OUTAGE_OTHER_RATE:-200}"; OUTAGE_OTHER_DELAY_MS="${OUTAGE_OTHER_DELAY_MS:-500}"
OUTAGE_LEASE="${OUTAGE_LEASE:-10s}"
LONGTX_N="${LONGTX_N:-$DRAIN_N}"; LONGTX_WORKERS="${LONGTX_WORKERS:-2}"; LONGTX_CONC="${LONGTX_CONC:-256}"
TRACE_N="${TRACE_N:-$DRAIN_N}"; TRACE_WORKERS="${TRACE_WORKERS:-2}"; TRACE_CONC="${TRACE_CONC:-256}"
PG_PORT="${PG_PORT:-25450}"
RUN_DIR="${RUN_DIR:-/tmp/courier-bench-run}"
PEERS_DIR="${PEERS_DIR:-$ROOT/../shared/bench/peers}"
VENV="${VENV:-/tmp/peers-venv}"
NGINX_PREFIX=/tmp/bench-nginx/    # fixed by the peers' http/nginx.conf (pid, temp paths)

say() { echo "## $(date -u +%FT%TZ) $*" | tee -a "$RUN_DIR/phases.log"; }
need_root_install() {
  if [ "$(id -u)" != 0 ]; then echo "missing: $*; install them (apt-get install -y $*) or run as root" >&2; exit 1; fi
  [ -n "${APT_UPDATED:-}" ] || { apt-get update -qq; APT_UPDATED=1; }
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

# ---- 1. what the run needs (Debian packages; PyPI for the peers' venv, first run only)
missing=()
[ -x /usr/lib/postgresql/15/bin/initdb ] || missing+=(postgresql-15)
[ -x /usr/lib/postgresql/15/bin/pgbench ] || missing+=(postgresql-15)
command -v psql >/dev/null || missing+=(postgresql-client-15)
pkg-config --exists libpq 2>/dev/null || missing+=(libpq-dev)
pkg-config --exists libcurl 2>/dev/null || missing+=(libcurl4-openssl-dev)
command -v nginx >/dev/null || missing+=(nginx-light)
command -v wrk >/dev/null || missing+=(wrk)
command -v pidstat >/dev/null || missing+=(sysstat)
command -v vmstat >/dev/null || missing+=(procps)
python3 -c 'import venv, ensurepip' 2>/dev/null || missing+=(python3-venv)
[ ${#missing[@]} = 0 ] || need_root_install $(printf '%s\n' "${missing[@]}" | sort -u)
[ -d "$PEERS_DIR" ] || { echo "peers harness not found at $PEERS_DIR (set PEERS_DIR)" >&2; exit 1; }

# ---- 2. release build
swift build -c release -j 2 --product jobworker >/dev/null
swift build -c release -j 2 --product jobctl >/dev/null
swift build -c release -j 2 --product courier-bench >/dev/null
BIN="$(swift build -c release --show-bin-path)"
# The claim batch pgbench uses: the worker's own default, read from its help (one source).
if [ -z "${PGB_BATCH:-}" ]; then
  PGB_BATCH="$("$BIN/jobworker" --help | sed -n 's/.*(default: \([0-9][0-9]*\); env: COURIER_CLAIM_BATCH).*/\1/p')"
  [ -n "$PGB_BATCH" ] || { echo "could not read --claim-batch's default from jobworker --help" >&2; exit 1; }
fi
BASE_BIN=""
if [ -n "${BASELINE:-}" ]; then
  base_tree="${BASELINE_DIR:-/tmp/courier-bench-baseline}"
  # Reused when it already holds that revision (its release build is then incremental).
  if [ "$(git -C "$base_tree" rev-parse HEAD 2>/dev/null)" != "$(git rev-parse "$BASELINE")" ]; then
    rm -rf "$base_tree"; git worktree prune
    git worktree add -f --detach "$base_tree" "$BASELINE" >/dev/null
  fi
  (cd "$base_tree" && swift build -c release -j 2 --product jobworker >/dev/null && swift build -c release -j 2 --product jobctl >/dev/null)
  # The traffic bench runs the claim's SQL from its own process: the baseline's claim needs the baseline's courier-bench.
  if has traffic; then (cd "$base_tree" && swift build -c release -j 2 --product courier-bench >/dev/null); fi
  BASE_BIN="$(cd "$base_tree" && swift build -c release --show-bin-path)"
fi

# ---- 3. run directory, private PostgreSQL (default durability: no --fast), peers copy + venv
rm -rf "$RUN_DIR"
mkdir -p "$RUN_DIR/work"
: > "$RUN_DIR/phases.log"
"$BIN/jobctl" devdb start --dir "$RUN_DIR/pg" --port "$PG_PORT" >/dev/null
# The peers harness reaches PostgreSQL through libpq's defaults: point them at the devdb,
# whose superuser is 'courier' (it expects the OS user to be a superuser role).
export PGHOST="$RUN_DIR/pg/run" PGPORT="$PG_PORT" PGUSER=courier PGDATABASE=postgres
cp -r "$PEERS_DIR" "$RUN_DIR/peers"
chmod -R u+w "$RUN_DIR/peers"
rm -rf "$RUN_DIR/peers/results"; mkdir -p "$RUN_DIR/peers/results"
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip
  "$VENV/bin/pip" install -q -r "$RUN_DIR/peers/requirements.lock"
fi
PY="$VENV/bin/python"

cleanup() {
  [ -n "${VMSTAT_PID:-}" ] && kill "$VMSTAT_PID" 2>/dev/null || true
  [ -f "$NGINX_PREFIX/nginx.pid" ] && nginx -c "$RUN_DIR/peers/http/nginx.conf" -p "$NGINX_PREFIX" -s quit 2>/dev/null || true
  [ "${KEEP_DB:-0}" = 1 ] || "$BIN/jobctl" devdb stop --dir "$RUN_DIR/pg" --port "$PG_PORT" >/dev/null 2>&1 || true
}
trap cleanup EXIT

# ---- 4. environment snapshot and machine-noise monitor
{
  echo "date: $(date -u +%FT%TZ)"
  echo "host: $(uname -srm)"
  echo "cpus: $(nproc) x$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
  echo "mem: $(free -g | awk '/Mem:/{print $2}') GiB"
  echo "loadavg at start: $(cat /proc/loadavg)"
  echo "courier commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "swift: $(swift --version 2>&1 | head -1)"
  echo "postgres: $(psql -AtX -c 'select version()')"
  for s in synchronous_commit fsync wal_sync_method shared_buffers max_wal_size checkpoint_timeout max_connections commit_delay jit; do
    echo "pg $s = $(psql -AtX -c "show $s")"
  done
  echo "pgbench: $(/usr/lib/postgresql/15/bin/pgbench --version)"
  echo "nginx: $(nginx -v 2>&1)"
  echo "wrk: $(wrk -v 2>&1 | head -1)"
  echo "python: $("$PY" --version)"
  "$PY" -m pip freeze | grep -Ei '^(pgqueuer|asyncpg|uvloop|aiohttp)=='
} > "$RUN_DIR/env.txt"
cat "$RUN_DIR/env.txt"
fsync_probe() {   # one 8 kB write + fdatasync, as the WAL does at every commit
  /usr/lib/postgresql/15/bin/pg_test_fsync -s 1 -f "$RUN_DIR/work/fsync.tmp" 2>&1 | grep -m1 -E '^ +fdatasync ' | tr -s ' ' || true
  rm -f "$RUN_DIR/work/fsync.tmp"
}
echo "pg_test_fsync at start: $(fsync_probe)" >> "$RUN_DIR/env.txt"
stdbuf -oL vmstat -n -t 1 > "$RUN_DIR/vmstat.log" &
VMSTAT_PID=$!

CB=("$BIN/courier-bench")
COMMON=(--db courier_bench --bin-dir "$BIN" --work-dir "$RUN_DIR/work" --out "$RUN_DIR/courier.jsonl" --pg-data "$RUN_DIR/pg/data")
"${CB[@]}" setup "${COMMON[@]}"
if [ -n "$BASE_BIN" ]; then
  # The baseline's own database, migrated by the baseline's own jobctl (its own migrations).
  psql -qAtX -d postgres -c "drop database if exists courier_bench_base with (force)" -c "create database courier_bench_base"
  "$BASE_BIN/jobctl" migrate --database-url "dbname=courier_bench_base" > "$RUN_DIR/work/baseline-migrate.log"
fi
# Before a phase that measures single milliseconds, a phase of its own: a checkpoint, then wait
# (up to a minute, one look a second at pg_stat_activity) until no autovacuum worker is cleaning
# up after the drains before it. How long it took is its row in RESULTS.md's vmstat table.
settle() {
  say "settle"
  psql -qAtX -c checkpoint >/dev/null
  for _ in $(seq 1 60); do
    [ "$(psql -qAtX -c "select count(*) from pg_stat_activity where backend_type = 'autovacuum worker'")" = 0 ] && return 0
    sleep 1
  done
  echo "settle: autovacuum still running after 60 s; measuring anyway" >&2
}
# The same measurement with the baseline's jobworker on its own database, into rows of their own (no-op without BASELINE).
base() { [ -z "$BASE_BIN" ] || "${CB[@]}" "$1" --db courier_bench_base --bin-dir "$BASE_BIN" --work-dir "$RUN_DIR/work" \
  --out "$RUN_DIR/courier-baseline.jsonl" --pg-data "$RUN_DIR/pg/data" "${@:2}"; }
PEERS=(env -C "$RUN_DIR/peers")

# ---- 5. raw-SQL limits (pgbench): Courier's own claim+ack, and the peers' minimal schema
if has pgbench; then
  say "pgbench start"
  "${CB[@]}" pgbench "${COMMON[@]}" --clients "$PGB_CLIENTS" --duration "$PGB_T" --fill "$PGB_FILL" --batch "$PGB_BATCH" --reps "$REPS"
  "${PEERS[@]}" env REPS="${PEERS_PGB_REPS:-1}" SCRIPTS=batch100_2tx MODES=on CLIENTS="${PGB_CLIENTS//,/ }" DURATION="$PGB_T" ./run_pgbench.sh > "$RUN_DIR/work/peers_pgbench.log"
  say "pgbench end"
fi

# ---- 6. no-op drain: Courier and PgQueuer, interleaved by repetition
if has drain; then
  "${PEERS[@]}" "$PY" bench_pgqueuer.py setup > "$RUN_DIR/work/pgq_setup.log" 2>&1
  for rep in $(seq 1 "$DRAIN_REPS"); do
    say "courier drain rep $rep"
    "${CB[@]}" drain "${COMMON[@]}" --kind noop --jobs "$DRAIN_N" --workers "$DRAIN_WORKERS" --concurrency "$DRAIN_CONC" --reps 1
    base drain --kind noop --jobs "$DRAIN_N" --workers "$DRAIN_WORKERS" --concurrency "$DRAIN_CONC" --reps 1
    say "courier drain --retention 0 rep $rep"
    "${CB[@]}" drain "${COMMON[@]}" --kind noop --jobs "$DRAIN_N" --workers "$DRAIN_WORKERS" --concurrency "$DRAIN_NOARCHIVE_CONC" --retention 0 --reps 1
    say "pgqueuer drain rep $rep"
    IFS=';' read -ra cfgs <<< "$PGQ_CONFIGS"
    for cfg in "${cfgs[@]}"; do
      set -- $cfg
      "${PEERS[@]}" "$PY" bench_pgqueuer.py drain --n "$DRAIN_N" --procs "$1" --qms "$2" --batch "$3" --reps 1
    done
  done
  say "drain end"
fi

# ---- 7. HTTP drain against the peers' private nginx
if has http; then
  if ss -ltn 2>/dev/null | grep -q '127.0.0.1:18080 '; then echo "port 127.0.0.1:18080 is busy; the peers' nginx.conf needs it" >&2; exit 1; fi
  mkdir -p "$NGINX_PREFIX"
  nginx -c "$RUN_DIR/peers/http/nginx.conf" -p "$NGINX_PREFIX"
  sleep 0.5
  say "wrk"
  wrk -t1 -c32 -d5s --latency http://127.0.0.1:18080/ok > "$RUN_DIR/work/wrk.log" 2>&1
  "${PEERS[@]}" "$PY" bench_pgqueuer_http.py setup > "$RUN_DIR/work/pgq_http_setup.log" 2>&1
  for rep in $(seq 1 "$REPS"); do
    say "courier http rep $rep"
    # This commit and the baseline alternate per configuration, so the two drains of a pair
    # run seconds apart rather than a whole set apart (the box drifts over tens of seconds).
    IFS=',' read -ra http_workers <<< "$HTTP_WORKERS"; IFS=',' read -ra http_conc <<< "$HTTP_CONC"
    for w in "${http_workers[@]}"; do
      for c in "${http_conc[@]}"; do
        "${CB[@]}" drain "${COMMON[@]}" --kind http --url http://127.0.0.1:18080/ok --jobs "$HTTP_N" --workers "$w" --concurrency "$c" --reps 1
        base drain --kind http --url http://127.0.0.1:18080/ok --jobs "$HTTP_N" --workers "$w" --concurrency "$c" --reps 1
      done
    done
    say "pgqueuer http rep $rep"
    IFS=';' read -ra cfgs <<< "$PGQ_HTTP_CONFIGS"
    for cfg in "${cfgs[@]}"; do
      set -- $cfg
      "${PEERS[@]}" "$PY" bench_pgqueuer_http.py drain --n "$HTTP_N" --procs "$1" --batch "$2" --max-tasks "$3" --client aiohttp --reps 1 --cpu
    done
  done
  nginx -c "$RUN_DIR/peers/http/nginx.conf" -p "$NGINX_PREFIX" -s quit
  say "http end"
fi

# ---- 8. pickup latency
if has latency; then
  "${PEERS[@]}" "$PY" bench_pgqueuer.py setup > "$RUN_DIR/work/pgq_setup2.log" 2>&1
  settle
  say "latency"
  # Courier and the baseline take turns going first (odd reps Courier, even reps the
  # baseline), so neither always meets what the run before it left behind.
  head_latency() { "${CB[@]}" latency "${COMMON[@]}" --jobs "$LAT_N" --interval-ms "$LAT_INTERVAL_MS" --reps 1 "$@"; }
  base_latency() { base latency --jobs "$LAT_N" --interval-ms "$LAT_INTERVAL_MS" --reps 1 "$@"; }
  # $1: the repetition; the rest are passed on.
  in_turn() {
    local rep="$1"; shift
    if [ $((rep % 2)) = 1 ]; then head_latency "$@"; base_latency "$@"; else base_latency "$@"; head_latency "$@"; fi
  }
  for rep in $(seq 1 "$REPS"); do
    in_turn "$rep"
    "${PEERS[@]}" "$PY" bench_pgqueuer.py latency --n "$LAT_N" --interval "$(python3 -c "print($LAT_INTERVAL_MS/1000)")" --procs 1 --qms 1 --batch 10 --reps 1
    if [ "$LAT_AHEAD" -gt 0 ]; then
      in_turn "$rep" --scheduled-ahead "$LAT_AHEAD"
    fi
  done
  say "latency end"
fi

# ---- 9. memory
if has memory; then
  say "memory"
  "${CB[@]}" memory "${COMMON[@]}" --concurrency "$MEM_CONC" --delay "$MEM_DELAY"
  base memory --concurrency "$MEM_CONC" --delay "$MEM_DELAY"
fi

# ---- 10. enqueue (issue 2), with PgQueuer's bulk enqueue for context
if has enqueue; then
  say "enqueue"
  "${CB[@]}" enqueue "${COMMON[@]}" --lines "$ENQ_LINES" --sql-calls "$ENQ_SQL_CALLS" --reps "$REPS"
  "${PEERS[@]}" "$PY" bench_pgqueuer.py setup > "$RUN_DIR/work/pgq_setup3.log" 2>&1
  "${PEERS[@]}" "$PY" bench_pgqueuer.py enqueue --n "$ENQ_LINES" --chunk 1000 --reps "$REPS"
  say "enqueue end"
fi

# ---- 10b. single-job enqueue under concurrency (issue 12): its own script and PostgreSQL
if has enqconc; then
  say "enqconc"
  HEAD_BIN="$BIN" CLIENTS="${ENQC_CLIENTS:-1 8 32}" T="${ENQC_T:-10}" RATE="${ENQC_RATE:-400}" OUT="$RUN_DIR/courier.jsonl" \
    RUN_DIR="$RUN_DIR/enqconc" bench/enqueue-concurrency.sh > "$RUN_DIR/work/enqconc.log" 2>&1 \
    || say "enqconc FAILED (work/enqconc.log); the run goes on without its section"
  say "enqconc end"
fi

# ---- 11. destination traffic control (issue 13): the claim with 100 capped destinations'
#          backlogs against no policies, in the same run (Courier only: no peer has exact caps);
#          with BASELINE, the baseline's own courier-bench (its claim SQL) interleaved by repetition
if has traffic; then
  say "traffic"
  for rep in $(seq 1 "$REPS"); do
    "${CB[@]}" traffic "${COMMON[@]}" --jobs "$TRAFFIC_JOBS" --destinations "$TRAFFIC_DESTINATIONS" \
      --waiting "$TRAFFIC_WAITING" --reps 1
    [ -z "$BASE_BIN" ] || "$BASE_BIN/courier-bench" traffic --db courier_bench_base --bin-dir "$BASE_BIN" \
      --work-dir "$RUN_DIR/work" --out "$RUN_DIR/courier-baseline.jsonl" --pg-data "$RUN_DIR/pg/data" \
      --jobs "$TRAFFIC_JOBS" --destinations "$TRAFFIC_DESTINATIONS" --waiting "$TRAFFIC_WAITING" --reps 1
  done
  say "traffic end"
fi

# ---- 12. fair claiming (issue 13): a trickle destination's pickup behind another's backlog,
#          no policies; with BASELINE, the old claim in the same run
if has fair; then
  say "fair"
  for rep in $(seq 1 "$REPS"); do
    "${CB[@]}" fair "${COMMON[@]}" --backlog "$FAIR_BACKLOG" --jobs "$FAIR_N" --interval-ms "$FAIR_INTERVAL_MS" --reps 1
    base fair --backlog "$FAIR_BACKLOG" --jobs "$FAIR_N" --interval-ms "$FAIR_INTERVAL_MS" --reps 1
  done
  say "fair end"
fi

# ---- 12a. fairness keys (issue 42): the trickle of many keys on an empty queue and behind one key's
#          flood, weighted shares per minute, and the fair claim's cost with many keys (Courier only:
#          no peer has fairness keys, and the baseline before 0045 has no column for them)
if has tenants; then
  say "tenants"
  for rep in $(seq 1 "$TENANT_REPS"); do
    "${CB[@]}" tenants "${COMMON[@]}" --flood "$TENANT_FLOOD" --trickle-keys "$TENANT_TRICKLE_KEYS" \
      --trickle-seconds "$TENANT_TRICKLE_S" --weighted-backlog "$TENANT_WEIGHTED_BACKLOG" \
      --weighted-minutes "$TENANT_WEIGHTED_MINUTES" --reps 1
    for keys in 0 1 "$TENANT_KEYS"; do
      "${CB[@]}" drain "${COMMON[@]}" --kind noop --jobs "$TENANT_KEYS_N" --workers 2 --concurrency 256 --reps 1 \
        --tag tenant-keys --fairness-keys "$keys"
    done
  done
  say "tenants end"
fi

# ---- 12b. tracing (issue 44): the no-op and HTTP drains with every attempt's span exported
# (OTEL_TRACES_SAMPLER=always_on) to a loopback OTLP/HTTP sink, against tracing off, interleaved.
if has tracing; then
  say "tracing start"
  python3 "$ROOT/bench/otlp_sink.py" "$RUN_DIR/work/otlp-sink.count" > "$RUN_DIR/work/otlp-sink.port" &
  SINK_PID=$!
  for _ in $(seq 1 50); do [ -s "$RUN_DIR/work/otlp-sink.port" ] && break; sleep 0.1; done
  SINK="http://127.0.0.1:$(head -n 1 "$RUN_DIR/work/otlp-sink.port")"
  TRACED=(env OTEL_EXPORTER_OTLP_ENDPOINT="$SINK" OTEL_TRACES_SAMPLER=always_on OTEL_BSP_SCHEDULE_DELAY=200)
  nginx_started=0
  if ! ss -ltn 2>/dev/null | grep -q '127.0.0.1:18080 '; then
    mkdir -p "$NGINX_PREFIX"; nginx -c "$RUN_DIR/peers/http/nginx.conf" -p "$NGINX_PREFIX"; sleep 0.5; nginx_started=1
  fi
  for rep in $(seq 1 "$REPS"); do
    say "tracing rep $rep"
    "${CB[@]}" drain "${COMMON[@]}" --kind noop --jobs "$TRACE_N" --workers "$TRACE_WORKERS" --concurrency "$TRACE_CONC" --reps 1 --tag trace-off
    "${TRACED[@]}" "${CB[@]}" drain "${COMMON[@]}" --kind noop --jobs "$TRACE_N" --workers "$TRACE_WORKERS" --concurrency "$TRACE_CONC" --reps 1 --tag trace-on
    "${CB[@]}" drain "${COMMON[@]}" --kind http --url http://127.0.0.1:18080/ok --jobs "$TRACE_N" --workers "$TRACE_WORKERS" --concurrency "$TRACE_CONC" --reps 1 --tag trace-off
    "${TRACED[@]}" "${CB[@]}" drain "${COMMON[@]}" --kind http --url http://127.0.0.1:18080/ok --jobs "$TRACE_N" --workers "$TRACE_WORKERS" --concurrency "$TRACE_CONC" --reps 1 --tag trace-on
    # "Unchanged when off": the baseline's drains of the same shape, in the same repetition.
    base drain --kind noop --jobs "$TRACE_N" --workers "$TRACE_WORKERS" --concurrency "$TRACE_CONC" --reps 1 --tag trace-off
    base drain --kind http --url http://127.0.0.1:18080/ok --jobs "$TRACE_N" --workers "$TRACE_WORKERS" --concurrency "$TRACE_CONC" --reps 1 --tag trace-off
  done
  [ "$nginx_started" = 1 ] && nginx -c "$RUN_DIR/peers/http/nginx.conf" -p "$NGINX_PREFIX" -s quit
  kill -TERM "$SINK_PID"; wait "$SINK_PID" 2>/dev/null || true
  say "tracing end: the sink took $(cat "$RUN_DIR/work/otlp-sink.count" 2>/dev/null || echo '? ?') (exports bytes)"
fi

# ---- 13. scale and endurance (issue 12). Sizes and durations from the SOAK_/BACKLOG_/OUTAGE_/LONGTX_ knobs.
if has longtx; then
  # The no-op drain with a repeatable-read transaction open across it, against the unimpeded drain, interleaved.
  for rep in $(seq 1 "$REPS"); do
    say "longtx rep $rep"
    "${CB[@]}" drain "${COMMON[@]}" --kind noop --jobs "$LONGTX_N" --workers "$LONGTX_WORKERS" --concurrency "$LONGTX_CONC" --reps 1 --tag longtx
    "${CB[@]}" drain "${COMMON[@]}" --kind noop --jobs "$LONGTX_N" --workers "$LONGTX_WORKERS" --concurrency "$LONGTX_CONC" --reps 1 --tag longtx --hold-snapshot 1
  done
  say "longtx end"
fi
if has backlog; then
  say "backlog"
  "${CB[@]}" backlog "${COMMON[@]}" --runnable "$BACKLOG_RUNNABLE" --waiting "$BACKLOG_WAITING" --held-share "$BACKLOG_HELD_SHARE" \
    --workers "$BACKLOG_WORKERS" --concurrency "$BACKLOG_CONC" --loaders "$BACKLOG_LOADERS" --reps 1
  say "backlog end"
fi
if has outage; then
  say "outage"
  "${CB[@]}" outage "${COMMON[@]}" --waiting "$OUTAGE_WAITING" --open-seconds "${OUTAGE_SECONDS:-$((OUTAGE_MINUTES * 60))}" --workers "$OUTAGE_WORKERS" \
    --concurrency "$OUTAGE_CONC" --other-rate "$OUTAGE_OTHER_RATE" --other-delay-ms "$OUTAGE_OTHER_DELAY_MS" --lease "$OUTAGE_LEASE" \
    --loaders "$BACKLOG_LOADERS"
  say "outage end"
fi
if has soak; then
  if [ "$SOAK_RATE" = auto ]; then
    SOAK_RATE="$(python3 - "$RUN_DIR/courier.jsonl" <<'PY'
import json, statistics, sys
from collections import defaultdict
rates = defaultdict(list)
try:
    for line in open(sys.argv[1]):
        r = json.loads(line)
        if r.get("bench") == "drain" and r.get("kind") == "noop" and not r.get("tag") and r.get("retention", "24h") not in ("0", "0s", "0ms"):
            rates[(r["workers"], r["concurrency"])].append(r["jobs_per_s"])
except FileNotFoundError:
    pass
print(int(max(statistics.median(v) for v in rates.values()) / 2) if rates else 8000)
PY
)"
  fi
  say "soak (rate $SOAK_RATE/s)"
  "${CB[@]}" soak "${COMMON[@]}" --minutes "$SOAK_MINUTES" --rate "$SOAK_RATE" --workers "$SOAK_WORKERS" --concurrency "$SOAK_CONC" \
    --retention "$SOAK_RETENTION" --sample "$SOAK_SAMPLE"
  say "soak end"
fi
if has held; then
  say "held: the soak unimpeded ($HELD_FREE_MINUTES min at $HELD_RATE/s)"
  "${CB[@]}" soak "${COMMON[@]}" --minutes "$HELD_FREE_MINUTES" --rate "$HELD_RATE" --workers "$HELD_WORKERS" --concurrency "$SOAK_CONC" \
    --retention "$HELD_RETENTION" --sample "$HELD_SAMPLE" --label unimpeded
  say "held: the soak with a snapshot held $HELD_MINUTES min, then $HELD_AFTER_MINUTES min after"
  "${CB[@]}" soak "${COMMON[@]}" --minutes "$((HELD_MINUTES + HELD_AFTER_MINUTES))" --rate "$HELD_RATE" --workers "$HELD_WORKERS" \
    --concurrency "$SOAK_CONC" --retention "$HELD_RETENTION" --sample "$HELD_SAMPLE" --hold-snapshot-seconds "$((HELD_MINUTES * 60))" --label held
  say "held end"
fi

say "done"
echo "pg_test_fsync at end: $(fsync_probe)" >> "$RUN_DIR/env.txt"
echo "loadavg at end: $(cat /proc/loadavg)" >> "$RUN_DIR/env.txt"
kill "$VMSTAT_PID" 2>/dev/null || true

# ---- 11. report
OUT_RESULTS="${OUT_RESULTS:-$ROOT/bench/results}"
# Clear the last run's rows, but keep bench/dashboard-bench.sh's tables (a run of its own).
mkdir -p "$OUT_RESULTS"; find "$OUT_RESULTS" -maxdepth 1 -type f ! -name 'dashboard-*.md' -delete
cp "$RUN_DIR"/{courier.jsonl,env.txt,vmstat.log,phases.log} "$OUT_RESULTS"/
[ -z "$BASE_BIN" ] || { cp "$RUN_DIR/courier-baseline.jsonl" "$OUT_RESULTS"/; echo "baseline: $(git rev-parse --short "$BASELINE")" >> "$OUT_RESULTS/env.txt"; }
cp "$RUN_DIR"/peers/results/*.jsonl "$RUN_DIR"/peers/results/*.csv "$OUT_RESULTS"/ 2>/dev/null || true
cp "$RUN_DIR/work/courier_claim_complete.sql" "$RUN_DIR/work/wrk.log" "$OUT_RESULTS"/ 2>/dev/null || true
python3 "$ROOT/bench/report.py" "$OUT_RESULTS" > "${OUT_MD:-$ROOT/bench/RESULTS.md}"
echo "wrote ${OUT_MD:-$ROOT/bench/RESULTS.md} (raw rows in $OUT_RESULTS)"
