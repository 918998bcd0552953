#!/usr/bin/env bash
# Single-job enqueue under concurrency (issue 12): `courier.enqueue` from C concurrent
# clients (pgbench, one call per transaction, prepared), against an otherwise identical
# copy of the function without its `pg_notify` (courier_bench_quiet.enqueue, created
# here in the bench database only), so the NOTIFY's cost shows as the difference, and
# against a copy that notifies on every call (as before migration 0023).
# Then end-to-end latency (enqueue transaction start -> success archived, from
# courier.completed_jobs) with one jobworker draining at a fixed offered rate.
#
#   bench/enqueue-concurrency.sh          (needs the release build; starts its own PostgreSQL and nginx)
# Knobs: CLIENTS ["1 8 32"]  T [10] seconds per run  RATE [400] jobs/s offered in the latency runs
#        OUT [unset]: also append one JSON row per figure to this file (bench/run.sh's `enqconc` mode does)
#        PG_PORT [25490]  RUN_DIR [/tmp/courier-enqconc]  NGINX_PORT [18191]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
BIN="${HEAD_BIN:-$(swift build -c release --show-bin-path)}"
CLIENTS="${CLIENTS:-1 8 32}"; T="${T:-10}"; RATE="${RATE:-400}"
PG_PORT="${PG_PORT:-25490}"; RUN_DIR="${RUN_DIR:-/tmp/courier-enqconc}"; NGINX_PORT="${NGINX_PORT:-18191}"
PGBENCH=/usr/lib/postgresql/15/bin/pgbench
rm -rf "$RUN_DIR"; mkdir -p "$RUN_DIR/nginx"
"$BIN/jobctl" devdb start --dir "$RUN_DIR/pg" --port "$PG_PORT" >/dev/null
export PGHOST="$RUN_DIR/pg/run" PGPORT="$PG_PORT" PGUSER=courier PGDATABASE=courier_enq
cat > "$RUN_DIR/nginx/nginx.conf" <<CONF
worker_processes 1; pid $RUN_DIR/nginx/nginx.pid; error_log $RUN_DIR/nginx/error.log warn; daemon on;
events { worker_connections 4096; }
http { access_log off; client_body_temp_path $RUN_DIR/nginx/cb; proxy_temp_path $RUN_DIR/nginx/px;
  fastcgi_temp_path $RUN_DIR/nginx/fc; uwsgi_temp_path $RUN_DIR/nginx/uw; scgi_temp_path $RUN_DIR/nginx/sc;
  keepalive_requests 1000000; server { listen 127.0.0.1:$NGINX_PORT; location /ok { return 200 'ok'; } } }
CONF
nginx -c "$RUN_DIR/nginx/nginx.conf" -p "$RUN_DIR/nginx/"
WORKER_PID=""
cleanup() {
  [ -n "$WORKER_PID" ] && kill "$WORKER_PID" 2>/dev/null && wait "$WORKER_PID" 2>/dev/null || true
  nginx -c "$RUN_DIR/nginx/nginx.conf" -p "$RUN_DIR/nginx/" -s quit 2>/dev/null || true
  "$BIN/jobctl" devdb stop --dir "$RUN_DIR/pg" --port "$PG_PORT" >/dev/null 2>&1 || true
}
trap cleanup EXIT
psql -qX -d postgres -c "create database courier_enq" >/dev/null
URL="postgresql:///courier_enq?host=$PGHOST&port=$PG_PORT&user=courier"
"$BIN/jobctl" migrate --database-url "$URL" >/dev/null
# courier.enqueue notifies once per transaction and queue (migration 0023: only the
# transaction holding the queue's advisory lock sends it). Two copies of it, in schemas of
# the bench database only, show what that saves: courier_bench_every.enqueue notifies on
# every call (as before 0023), courier_bench_quiet.enqueue never does (the floor).
signature='courier.enqueue(text,text,jsonb,text,text,int,timestamptz,int,timestamptz,text,text,text,int,text,text)'
psql -qAtX -c "select pg_get_functiondef('$signature'::regprocedure)" > "$RUN_DIR/current.sql"
once='if pg_try_advisory_xact_lock\([^;]*?\) then\s*(perform pg_notify\([^;]*\);)\s*end if;'
perl -0pe "s/FUNCTION courier\.enqueue\(/FUNCTION courier_bench_every.enqueue(/; s/$once/\$1/s" "$RUN_DIR/current.sql" > "$RUN_DIR/every.sql"
perl -0pe "s/FUNCTION courier\.enqueue\(/FUNCTION courier_bench_quiet.enqueue(/; s/$once//s" "$RUN_DIR/current.sql" > "$RUN_DIR/quiet.sql"
grep -q "pg_try_advisory_xact_lock" "$RUN_DIR/current.sql"
! grep -q "pg_try_advisory_xact_lock" "$RUN_DIR/every.sql" && grep -q "pg_notify" "$RUN_DIR/every.sql"
! grep -q "pg_notify" "$RUN_DIR/quiet.sql"
psql -qX -c "create schema courier_bench_every" -f "$RUN_DIR/every.sql" >/dev/null
psql -qX -c "create schema courier_bench_quiet" -f "$RUN_DIR/quiet.sql" >/dev/null
for variant in current every quiet; do
  fn=courier.enqueue; [ "$variant" = current ] || fn="courier_bench_$variant.enqueue"
  echo "select $fn(url => 'http://127.0.0.1:$NGINX_PORT/ok', queue => 'enq');" > "$RUN_DIR/$variant.pgb"
done
reset() { psql -qX -c "delete from courier.jobs" -c "delete from courier.completed_jobs" -c "vacuum analyze courier.jobs" >/dev/null; }
start_worker() {   # $1 queue
  "$BIN/jobworker" --database-url "$URL" --queues "$1" --concurrency 256 --allow-private-networks --log-level warning \
    > "$RUN_DIR/worker-$1.log" 2>&1 &
  WORKER_PID=$!
  sleep 2
}
stop_worker() { kill "$WORKER_PID"; wait "$WORKER_PID" || true; WORKER_PID=""; }

echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "## throughput: jobs/s (pgbench tps) and mean latency per call; an idle worker on another queue listens"
start_worker idle
for c in $CLIENTS; do
  for variant in ${VARIANTS:-current every quiet}; do
    reset
    out=$("$PGBENCH" -n -M prepared -c "$c" -j $(( c < 2 ? c : 2 )) -T "$T" -f "$RUN_DIR/$variant.pgb" 2>&1)
    tps=$(echo "$out" | sed -n 's/^tps = \([0-9.]*\).*/\1/p'); lat=$(echo "$out" | sed -n 's/^latency average = \(.*\)$/\1/p')
    echo "clients $c  $variant  tps $tps  latency $lat  load $(cut -d' ' -f1 /proc/loadavg)"
    [ -z "${OUT:-}" ] || printf '{"bench":"enqconc","phase":"throughput","clients":%s,"variant":"%s","jobs_per_s":%s,"latency":"%s","seconds":%s}\n' \
      "$c" "$variant" "${tps:-0}" "$lat" "$T" >> "$OUT"
  done
done
stop_worker

echo "## pickup: one jobworker --concurrency 256 draining queue enq; pgbench offers $RATE jobs/s for $T s"
start_worker enq
for c in $CLIENTS; do
  for variant in ${VARIANTS:-current every quiet}; do
    reset
    "$PGBENCH" -n -M prepared -c "$c" -j $(( c < 2 ? c : 2 )) -T "$T" -R "$RATE" -f "$RUN_DIR/$variant.pgb" > "$RUN_DIR/pgb-$variant-$c.log" 2>&1
    sleep 2
    row=$(psql -qAtX -c "select json_build_object('bench', 'enqconc', 'phase', 'pickup', 'clients', $c, 'variant', '$variant',
        'rate', $RATE, 'n', count(*),
        'p50_ms', round((percentile_cont(0.5) within group (order by extract(epoch from finished_at - created_at)) * 1000)::numeric, 1),
        'p99_ms', round((percentile_cont(0.99) within group (order by extract(epoch from finished_at - created_at)) * 1000)::numeric, 1),
        'left_in_jobs', (select count(*) from courier.jobs))
      from courier.completed_jobs")
    echo "$row"
    [ -z "${OUT:-}" ] || echo "$row" >> "$OUT"
  done
done
stop_worker
