#!/usr/bin/env bash
# Runs the whole test suite against a private PostgreSQL cluster that it starts
# and stops itself. Installs what is missing first. Extra arguments go to `swift test`
# (for example: scripts/test.sh --filter CourierStoreTests).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
swift build --build-tests
bin=$(swift build --show-bin-path)

dir=$(mktemp -d /tmp/courier-test-XXXXXX)
chmod 755 "$dir"
# A free port below Linux's ephemeral range (32768+), where no client socket can take it.
free_port() {
    python3 -c '
import random, socket
for _ in range(200):
    p = random.randint(20000, 30999)
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p)); print(p); break
    except OSError:
        pass
    finally:
        s.close()
'
}
port=$(free_port)
cleanup() {
    for pidfile in "$dir"/pgbouncer-*/pgbouncer.pid; do
        if [ -f "$pidfile" ]; then kill -TERM "$(cat "$pidfile")" 2>/dev/null || true; fi
    done
    "$bin/jobctl" devdb stop --dir "$dir" >/dev/null 2>&1 || true
    rm -rf "$dir"
}
trap cleanup EXIT

echo "starting a private PostgreSQL in $dir on port $port" >&2
"$bin/jobctl" devdb start --dir "$dir" --port "$port" --fast >/dev/null

# The cluster's Unix socket is in a private directory; its TCP port (and the PgBouncers')
# asks for the generated password in the devdb's passfile, so no other local user gets in.
export COURIER_TEST_DATABASE_URL="postgresql:///postgres?host=$dir/run&port=$port&user=courier"
export COURIER_BIN_DIR="$bin"
passfile="$dir/run/pgpass"
password=$(head -n 1 "$passfile" | cut -d: -f5)
# PgBouncer in each pool mode in front of the cluster, with its default configuration;
# tests reach their own database through them by name (and fail when these are unset).
session_port=$(scripts/start-pgbouncer.sh session "$dir/pgbouncer-session" "$dir/run" "$port" "$(free_port)" "$passfile")
transaction_port=$(scripts/start-pgbouncer.sh transaction "$dir/pgbouncer-transaction" "$dir/run" "$port" "$(free_port)" "$passfile")
statement_port=$(scripts/start-pgbouncer.sh statement "$dir/pgbouncer-statement" "$dir/run" "$port" "$(free_port)" "$passfile")
export COURIER_TEST_PGBOUNCER_STATEMENT_URL="postgresql://courier:$password@127.0.0.1:$statement_port/postgres"
export COURIER_TEST_PGBOUNCER_SESSION_URL="postgresql://courier:$password@127.0.0.1:$session_port/postgres"
export COURIER_TEST_PGBOUNCER_TRANSACTION_URL="postgresql://courier:$password@127.0.0.1:$transaction_port/postgres"
# Tests that drive a real Python client (receivers, parsers, psycopg) use this interpreter.
export COURIER_TEST_PYTHON="$PWD/.venv/bin/python3"
# The whole suite runs as COURIER_TEST_JOBS (default 1) serial `swift test` processes
# at once, each taking small batches of suites
# (scripts/run-test-batches.py says why processes and not `swift test --parallel`), and
# then the deployment files (Kubernetes, systemd, Docker, Prometheus) are validated
# offline. With arguments, one serial `swift test` runs them, and nothing else.
if [ $# -eq 0 ]; then
    python3 scripts/run-test-batches.py
    scripts/validate-deploy.sh
else
    swift test --skip-build --no-parallel "$@"
fi
