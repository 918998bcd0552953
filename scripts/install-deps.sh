#!/usr/bin/env bash
# Installs what Courier needs on Debian or Ubuntu, and nothing that is already there:
# the PostgreSQL server (for the private devdb cluster), PgBouncer (pooler tests),
# Chromium and its WebDriver (the dashboard's browser tests),
# libpq, libcurl and libcrypto headers, time-zone data, and a Python environment in
# .venv with the PyPI packages the tests use (scripts/requirements-test.txt).
# Extra Debian package names can be passed as arguments (the benchmark adds nginx-light, wrk).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v swift >/dev/null 2>&1; then
    echo "error: the Swift toolchain (6.0 or newer) is required: https://www.swift.org/install/linux/" >&2
    exit 1
fi

packages=(postgresql postgresql-contrib libpq-dev libcurl4-openssl-dev libssl-dev pkg-config openssl
          pgbouncer tzdata python3 python3-venv chromium chromium-driver "$@")
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi

if [ ${#missing[@]} -gt 0 ]; then
    echo "installing: ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    # Debian's postgresql and pgbouncer packages would start system services; Courier
    # runs its own, so keep package scripts from starting any (harmless where none can start).
    policy=/usr/sbin/policy-rc.d
    if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null
        $sudo chmod +x "$policy"
        trap '$sudo rm -f "$policy"' EXIT
    fi
    $sudo apt-get update -qq
    $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The tests' Python packages, in a virtual environment of the checkout's own; reinstalled
# only when the requirements file changes.
requirements=scripts/requirements-test.txt
stamp=.venv/.requirements
if [ ! -x .venv/bin/python3 ] || ! cmp -s "$requirements" "$stamp"; then
    echo "installing the tests' Python packages into .venv" >&2
    python3 -m venv .venv
    .venv/bin/python3 -m pip install -q --disable-pip-version-check -r "$requirements"
    cp "$requirements" "$stamp"
fi
