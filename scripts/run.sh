#!/usr/bin/env bash
# Installs what is missing, builds Courier in release mode, starts the private
# development PostgreSQL (jobctl devdb), applies the schema and runs a worker on it.
# Arguments go to jobworker (see `jobworker --help`). Stop with Ctrl-C: the worker
# shuts down gracefully; `jobctl devdb stop` stops the database.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
swift build -c release --product jobctl
swift build -c release --product jobworker
bin=$(swift build -c release --show-bin-path)

url=$("$bin/jobctl" devdb start)
"$bin/jobctl" migrate --database-url "$url"
echo "database: $url" >&2
echo "enqueue with: $bin/jobctl enqueue --database-url '$url' --url https://example.com/hook --data '{\"hello\":1}'" >&2
exec "$bin/jobworker" --database-url "$url" "$@"
