#!/usr/bin/env bash
# Starts a PgBouncer from Debian's package in front of the test cluster, on loopback,
# and prints its port. Usage:
#   scripts/start-pgbouncer.sh MODE DIR PG_SOCKET_DIR PG_PORT PORT PASSFILE
#
# Everything is PgBouncer's default except where it listens, how clients authenticate
# (scram-sha-256 with the cluster's generated password for `courier`, read from PASSFILE,
# the devdb's libpq passfile, so other local users cannot get in through it), the
# database entry (any name goes to the cluster, over its private Unix socket) and the
# pool mode; the log and pid files let it run in the background.
# Stop it with: kill -TERM "$(cat DIR/pgbouncer.pid)".
set -euo pipefail
mode=$1 dir=$2 socket_dir=$3 pg_port=$4 port=$5 passfile=$6

bin=$(command -v pgbouncer || echo /usr/sbin/pgbouncer)
[ -x "$bin" ] || { echo "pgbouncer not found: install Debian's pgbouncer package (scripts/install-deps.sh does)" >&2; exit 1; }

password=$(head -n 1 "$passfile" | cut -d: -f5)
[ -n "$password" ] || { echo "no password in $passfile" >&2; exit 1; }
mkdir -p "$dir"
(umask 077; printf '"courier" "%s"\n' "$password" > "$dir/users.txt")
cat > "$dir/pgbouncer.ini" <<INI
[databases]
* = host=$socket_dir port=$pg_port

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir = $dir
auth_type = scram-sha-256
auth_file = $dir/users.txt
pool_mode = $mode
logfile = $dir/pgbouncer.log
pidfile = $dir/pgbouncer.pid
INI

# PgBouncer refuses to run as root; run it as the cluster's owner then.
as=()
if [ "$(id -u)" = 0 ]; then
    chown -R postgres "$dir"
    as=(/usr/sbin/runuser -u postgres --)
fi
if ! "${as[@]}" "$bin" -d "$dir/pgbouncer.ini" >&2; then
    echo "PgBouncer ($mode mode) failed to start; $dir/pgbouncer.log:" >&2
    tail -n 20 "$dir/pgbouncer.log" >&2 2>/dev/null || true
    exit 1
fi
for _ in $(seq 100); do
    if python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 0.2)" 2>/dev/null; then
        echo "$port"
        exit 0
    fi
    sleep 0.1
done
echo "PgBouncer ($mode mode) is not accepting connections on 127.0.0.1:$port; $dir/pgbouncer.log:" >&2
tail -n 20 "$dir/pgbouncer.log" >&2 2>/dev/null || true
exit 1
