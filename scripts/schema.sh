#!/usr/bin/env bash
# Writes sql/schema/: today's courier schema, one file per table family, generated from a
# freshly migrated database (scripts/schema.py says how it is normalised and split).
#
#   scripts/schema.sh                    regenerate sql/schema/ (after adding a migration)
#   scripts/schema.sh --check DIR        compare DIR with the schema; exit 1 when it differs
#   scripts/schema.sh [URL] [--out DIR | --check DIR]
#
# With no database URL it builds jobctl (swift build --product jobctl, unless COURIER_BIN_DIR
# names a bin directory that holds a current one), starts a throw-away PostgreSQL cluster
# (jobctl devdb start --fast), migrates it with `jobctl migrate`, dumps it and stops it.
# With a URL it dumps that database, which must be migrated already (SchemaSnapshotTests
# passes its own test database).
set -euo pipefail
cd "$(dirname "$0")/.."

url=""
for argument in "$@"; do
    case "$argument" in
        -h|--help) exec python3 scripts/schema.py --help ;;
    esac
done
# The URL is the one argument that is neither an option nor an option's value.
previous=""
for argument in "$@"; do
    if [ "$previous" != "--out" ] && [ "$previous" != "--check" ] && [ "${argument#-}" = "$argument" ]; then
        url="$argument"
    fi
    previous="$argument"
done
if [ -n "$url" ]; then
    exec python3 scripts/schema.py "$@"
fi

if [ -n "${COURIER_BIN_DIR:-}" ]; then
    bin="$COURIER_BIN_DIR"
else
    # The migrations are compiled into jobctl, so it is rebuilt to carry the ones in sql/ now.
    swift build --product jobctl >&2
    bin=$(swift build --show-bin-path)
fi
[ -x "$bin/jobctl" ] || { echo "schema: $bin/jobctl not found" >&2; exit 2; }

dir=$(mktemp -d /tmp/courier-schema-XXXXXX)
chmod 755 "$dir"
cleanup() {
    "$bin/jobctl" devdb stop --dir "$dir" >/dev/null 2>&1 || true
    rm -rf "$dir"
}
trap cleanup EXIT
# A free port below Linux's ephemeral range (as scripts/test.sh chooses one).
port=$(python3 -c '
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
')
"$bin/jobctl" devdb start --dir "$dir" --port "$port" --fast >/dev/null
url="postgresql:///courier?host=$dir/run&port=$port&user=courier"
"$bin/jobctl" migrate --database-url "$url" >/dev/null
# Not exec: the trap stops the cluster afterwards.
status=0
python3 scripts/schema.py "$url" "$@" || status=$?
exit "$status"
