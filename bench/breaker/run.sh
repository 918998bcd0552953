#!/usr/bin/env bash
# Reproduces the figures in bench/breaker/RESULTS.md: a 20 s outage (HTTP 503) of one
# loopback destination, for fleets of 1, 3 and 8 workers, with Courier's shared
# breaker, a per-process breaker and no breaker. About 4-5 minutes on 2 cores.
#
#   COURIER_TEST_DATABASE_URL=postgresql://courier@127.0.0.1:54320/postgres bench/breaker/run.sh
#
# Extra arguments go to courier-breaker-sim (see --help), e.g. --fleets 3 --outage 10s.
# Set CONFIG=release for an optimized build (slower to build; the figures are about
# counts and seconds of waiting, so a debug build gives the same picture).
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${COURIER_TEST_DATABASE_URL:?set it to an admin URL of a PostgreSQL cluster, e.g. postgresql://courier@127.0.0.1:54320/postgres}"
config=${CONFIG:-debug}
swift build -j 2 -c "$config" --product courier-breaker-sim
bin=$(swift build -c "$config" --show-bin-path)
"$bin/courier-breaker-sim" --results bench/breaker/figures.md "$@"
