#!/usr/bin/env bash
# Page and API latency of `jobctl dashboard` at size: JOBS jobs and DEAD dead letters,
# generated with one INSERT ... SELECT generate_series each (not through the API), on a
# private PostgreSQL. Prints one line per URL (median, p95 and max of ROUNDS requests,
# in ms, measured by curl) and writes the table to bench/results/dashboard-latest.md,
# replacing the last run's (git keeps earlier runs; docs/performance.md quotes the latest).
#
#   bench/dashboard-bench.sh                      # 10M jobs, 1M dead letters
#   JOBS=1000000 DEAD=100000 bench/dashboard-bench.sh   # a reduced size
#
# Knobs: JOBS [10000000]  DEAD [1000000]  ROUNDS [15]  PG_PORT [25460]  KEEP_DB=1 leaves it running;
# REUSE_DB=1 measures the database a KEEP_DB run left (same JOBS and DEAD) without generating.
# The overview (/ and /api/stats) is a snapshot taken at most once a second and answered
# from memory while the next is taken; those URLs are requested 1.1 s apart, and the
# database's time for each snapshot (the `snapshot_ms` of /api/stats) is printed last.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
jobs=${JOBS:-10000000}
dead=${DEAD:-1000000}
rounds=${ROUNDS:-15}
pg_port=${PG_PORT:-25460}
dir=${RUN_DIR:-/tmp/courier-dashboard-bench}

swift build -c release --product jobctl >&2
bin=$(swift build -c release --show-bin-path)
export DATABASE_URL="postgresql:///courier?host=$dir/run&port=$pg_port&user=courier"
if [ "${REUSE_DB:-0}" != 1 ]; then
"$bin/jobctl" devdb stop --dir "$dir" >/dev/null 2>&1 || true
rm -rf "$dir"; mkdir -p "$dir"; chmod 755 "$dir"
"$bin/jobctl" devdb start --dir "$dir" --port "$pg_port" >/dev/null
cleanup() {
    [ -n "${dash_pid:-}" ] && kill "$dash_pid" 2>/dev/null || true
    [ "${KEEP_DB:-0}" = 1 ] || "$bin/jobctl" devdb stop --dir "$dir" >/dev/null 2>&1 || true
}
trap cleanup EXIT
"$bin/jobctl" migrate >/dev/null

echo "generating $jobs jobs and $dead dead letters" >&2
start=$(date +%s)
psql -q -v ON_ERROR_STOP=1 "$DATABASE_URL" <<SQL
insert into courier.jobs (queue, destination, method, url, idempotency_key, run_at, created_at)
select 'q' || (g % 4), 'http://d' || (g % 200) || '.example:80', 'POST',
       'http://d' || (g % 200) || '.example/hook/' || g, 'key-' || g,
       now() + ((g % 3) - 1) * interval '1 hour', now() - interval '1 day'
from generate_series(1, $jobs) g;
insert into courier.dead_letters (job_id, reason, kind, queue, priority, destination, method, url, headers, body,
    timeout_ms, idempotency_key, max_attempts, attempt, errors, last_class, last_status, created_at, failed_at)
select 100000000 + g,
       (array['permanent','invalid_response','exhausted','deadline','ambiguous','cancelled'])[1 + g % 6],
       'http', 'q' || (g % 4), 0, 'http://d' || (g % 200) || '.example:80', 'POST',
       'http://d' || (g % 200) || '.example/hook/' || g, '{"Authorization": "Bearer x"}', '{"n":' || g || '}',
       30000, 'dkey-' || g, 5, 5, '[]', 'server', 503, now() - interval '31 days',
       now() - (g % 2592000) * interval '1 second'
from generate_series(1, $dead) g;
insert into courier.breakers (destination, state, changed_at)
select 'http://d' || g || '.example:80', case when g < 5 then 'open' else 'closed' end, now() - interval '5 minutes'
from generate_series(0, 199) g on conflict do nothing;
insert into courier.attempt_stats (bucket, queue, destination, class, attempts)
select date_trunc('minute', now()) - m * interval '1 minute', 'q' || q, 'http://d' || d || '.example:80', c, 10 + m
from generate_series(0, 59) m, generate_series(0, 3) q, generate_series(0, 49) d, unnest(array['success','server','timeout']) c;
vacuum analyze courier.jobs;
vacuum analyze courier.dead_letters;
analyze courier.breakers;
analyze courier.attempt_stats;
SQL
echo "generated in $(( $(date +%s) - start ))s" >&2
fi

dash_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$bin/jobctl" dashboard --listen "127.0.0.1:$dash_port" 2>"$dir/dashboard.log" &
dash_pid=$!
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$dash_port/assets/app.css" && break; sleep 0.1; done
base="http://127.0.0.1:$dash_port"
mid=$(( jobs / 2 ))
dead_mid=$(psql -At "$DATABASE_URL" -c "select (extract(epoch from failed_at)*1000000)::bigint || '-' || id from courier.dead_letters where id = $(( dead / 2 ))")

urls=(
    "/" "/api/stats" "/queues" "/jobs" "/jobs?queue=q2" "/jobs?state=available&destination=http%3A%2F%2Fd17.example%3A80"
    "/jobs?q=no-such-text" "/jobs?after=$mid" "/jobs/$mid" "/api/jobs" "/api/jobs/$mid"
    "/dead" "/dead?reason=ambiguous" "/dead?destination=http%3A%2F%2Fd17.example%3A80" "/dead?since=-24h&until=-12h"
    "/dead?after=$dead_mid" "/dead/$(( dead / 2 ))" "/api/dead" "/api/dead?reason=deadline"
    "/dead/replay?reason=ambiguous&destination=http%3A%2F%2Fd17.example%3A80" "/dead/replay?reason=ambiguous"
    "/breakers" "/api/breakers" "/destinations" "/workers" "/api/workers" "/schedules"
)
# One file, replaced by each run (earlier runs live in git, not in dated files).
out="bench/results/dashboard-latest.md"
mkdir -p bench/results
{
    echo "Dashboard latency, $jobs jobs and $dead dead letters, $rounds requests per URL (ms; curl time_total)"
    echo
    echo "| URL | status | median | p95 | max |"
    echo "|---|---|---|---|---|"
} | tee "$out"
for path in "${urls[@]}"; do
    times=()
    status=0
    for _ in $(seq "$rounds"); do
        case "$path" in /|/api/stats) sleep 1.1 ;; esac
        read -r status t < <(curl -s -o /dev/null -w "%{http_code} %{time_total}\n" "$base$path")
        times+=("$t")
    done
    printf '%s\n' "${times[@]}" | python3 -c '
import sys, statistics
v = sorted(float(x) * 1000 for x in sys.stdin)
p95 = v[min(len(v) - 1, int(round(0.95 * (len(v) - 1))))]
print("| `%s` | %s | %.1f | %.1f | %.1f |" % (sys.argv[1], sys.argv[2], statistics.median(v), p95, v[-1]))
' "$path" "$status" | tee -a "$out"
done
for _ in $(seq "$rounds"); do sleep 1.1; curl -s "$base/api/stats"; echo; done | python3 -c '
import json, statistics, sys
v = sorted(json.loads(line)["snapshot_ms"] for line in sys.stdin if line.strip())
print("| overview snapshot (database time, snapshot_ms) | | %.1f | %.1f | %.1f |" % (statistics.median(v), v[min(len(v) - 1, int(round(0.95 * (len(v) - 1))))], v[-1]))
' | tee -a "$out"
echo >&2 "written to $out"
