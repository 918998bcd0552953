#!/usr/bin/env bash
# Where the database time of a drain goes: runs Courier's claim+ack pgbench script (generated
# by courier-bench from JobsTable.claimSQL/completeSQL) with pg_stat_statements on a private
# cluster, as is and with the jobs table's CHECK constraints dropped, and the peers' minimal
# schema for reference. Prints mean execution time, buffers and WAL records per statement.
#   bench/profile-sql.sh            # needs a release build (bench/run.sh makes one)
# Knobs: PG_PORT [54351]  RUN_DIR [/tmp/courier-bench-profile]  T [5] seconds per run  CLIENTS [1]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PG_PORT="${PG_PORT:-54351}"; RUN_DIR="${RUN_DIR:-/tmp/courier-bench-profile}"; T="${T:-5}"; CLIENTS="${CLIENTS:-1}"
PEERS_DIR="${PEERS_DIR:-$ROOT/../shared/bench/peers}"
BIN="$(cd "$ROOT" && swift build -c release --show-bin-path)"
rm -rf "$RUN_DIR"; mkdir -p "$RUN_DIR/work"
"$BIN/jobctl" devdb start --dir "$RUN_DIR/pg" --port "$PG_PORT" >/dev/null
export PGHOST="$RUN_DIR/pg/run" PGPORT="$PG_PORT" PGUSER=courier PGDATABASE=postgres
trap '"$BIN/jobctl" devdb stop --dir "$RUN_DIR/pg" --port "$PG_PORT" >/dev/null 2>&1 || true' EXIT
psql -qXc "alter system set shared_preload_libraries = 'pg_stat_statements'"
"$BIN/jobctl" devdb stop --dir "$RUN_DIR/pg" --port "$PG_PORT" >/dev/null
"$BIN/jobctl" devdb start --dir "$RUN_DIR/pg" --port "$PG_PORT" >/dev/null
"$BIN/courier-bench" setup --db courier_profile --bin-dir "$BIN" --work-dir "$RUN_DIR/work"
"$BIN/courier-bench" script > "$RUN_DIR/work/claim_complete.sql"
psql -qX -d courier_profile -c "create extension pg_stat_statements"
createdb minimal_profile
psql -qX -d minimal_profile -f "$PEERS_DIR/pgbench/schema.sql" >/dev/null 2>&1
psql -qX -d minimal_profile -c "create extension pg_stat_statements"

stats() {
  psql -AtX -d "$1" -F ' | ' -c "select round(mean_exec_time::numeric, 3) || ' ms', calls, shared_blks_hit / calls || ' buffers',
      wal_records / calls || ' WAL records', left(regexp_replace(query, '\s+', ' ', 'g'), 48)
    from pg_stat_statements where calls > 10 order by total_exec_time desc limit 2"
}
courier_run() {
  psql -qX -d courier_profile -c "truncate courier.jobs, courier.completed_jobs" \
    -c "insert into courier.jobs (kind, destination, args, queue) select 'noop', 'job:noop', '{}', 'bench' from generate_series(1, 400000)" \
    -c "vacuum analyze courier.jobs" -c "checkpoint" -c "select pg_stat_statements_reset()" >/dev/null
  echo "== Courier claim+ack, $1 (load $(cut -d' ' -f1 /proc/loadavg))"
  /usr/lib/postgresql/15/bin/pgbench -n -M prepared -f "$RUN_DIR/work/claim_complete.sql" -c "$CLIENTS" -j "$CLIENTS" -T "$T" \
    -D queue=bench -D batch=100 -D wid=6f1c1f0e-0000-4000-8000-000000000001 -D lease=30000 courier_profile 2>&1 | grep -E '^(tps|latency average)'
  stats courier_profile
}
courier_run "schema as migrated"
checks=$(psql -AtX -d courier_profile -c "select string_agg(format('alter table courier.jobs drop constraint %I;', conname), ' ')
  from pg_constraint where conrelid = 'courier.jobs'::regclass and contype = 'c'")
psql -qX -d courier_profile -c "$checks"
courier_run "CHECK constraints of courier.jobs dropped"
psql -qX -d minimal_profile -v rows=400000 -f "$PEERS_DIR/pgbench/fill.sql" >/dev/null
psql -qX -d minimal_profile -c "select pg_stat_statements_reset()" >/dev/null
echo "== peers' minimal schema, batch100_2tx (load $(cut -d' ' -f1 /proc/loadavg))"
/usr/lib/postgresql/15/bin/pgbench -n -M prepared -f "$PEERS_DIR/pgbench/batch100_2tx.sql" -c "$CLIENTS" -j "$CLIENTS" -T "$T" minimal_profile 2>&1 | grep -E '^(tps|latency average)'
stats minimal_profile
