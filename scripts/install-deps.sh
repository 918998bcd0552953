#!/usr/bin/env bash
# Installs what Courier needs on Debian or Ubuntu, and nothing that is already there:
# the PostgreSQL server (for the private devdb cluster), libpq and libcurl headers.
# Extra package names can be passed as arguments (the benchmark adds nginx-light, wrk).
set -euo pipefail

if ! command -v swift >/dev/null 2>&1; then
    echo "error: the Swift toolchain (6.0 or newer) is required: https://www.swift.org/install/linux/" >&2
    exit 1
fi

packages=(postgresql postgresql-contrib libpq-dev libcurl4-openssl-dev pkg-config openssl "$@")
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi

echo "installing: ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
# Debian's postgresql package would start a system cluster; Courier runs its own, so
# keep package scripts from starting services (harmless where none can start).
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null
    $sudo chmod +x "$policy"
    trap '$sudo rm -f "$policy"' EXIT
fi
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
