#!/usr/bin/env bash
# Usage: ops/install.sh — installs the Debian 12 packages the project needs (only those missing) and checks swift.
set -euo pipefail

# prometheus: its promtool checks the deploy kit's alert rules (ops/deploy/check.sh); the server is not run.
# tmux: ops/faults/run-cleanup.sh types Ctrl-C into ops/run.sh in a terminal.
packages=(redis-server postgresql-15 libhiredis-dev libpq-dev libcurl4-openssl-dev libsodium-dev libcrypt-dev pkg-config procps curl openssl prometheus tmux)

missing=()
for package in "${packages[@]}"; do
    status=$(dpkg-query -W -f='${db:Status-Status}' "$package" 2>/dev/null || true)
    [[ $status == installed ]] || missing+=("$package")
done

if ((${#missing[@]})); then
    echo "install.sh: installing ${missing[*]}"
    sudo=()
    [[ $(id -u) == 0 ]] || sudo=(sudo)
    "${sudo[@]}" apt-get update -q
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# The tests' local SMTP server (a real one, from PyPI).
if ! python3 -c 'import aiosmtpd' 2>/dev/null; then
    echo "install.sh: installing aiosmtpd (PyPI)"
    python3 -m pip install -q aiosmtpd
fi

# The client tests' HTTP/2 server and the in-flight benchmark's (a real one, from PyPI).
if ! python3 -c 'import hypercorn' 2>/dev/null; then
    echo "install.sh: installing hypercorn (PyPI)"
    python3 -m pip install -q 'hypercorn>=0.17,<1'
fi

# The API contract fuzzer (ops/contract.sh), from PyPI.
if ! python3 -c 'import schemathesis' 2>/dev/null; then
    echo "install.sh: installing schemathesis (PyPI)"
    python3 -m pip install -q 'schemathesis>=4.32,<5'
fi

# The deploy kit's Kubernetes manifests against the API schemas (ops/deploy/check.sh), from PyPI.
if ! command -v kubernetes-validate >/dev/null; then
    echo "install.sh: installing kubernetes-validate (PyPI)"
    python3 -m pip install -q 'kubernetes-validate>=1.32,<2'
fi

# The dashboard's browser test (ops/dashboard/run.sh): headless Chromium and its driver from Debian, Selenium from PyPI.
browser=()
for package in chromium chromium-driver; do
    status=$(dpkg-query -W -f='${db:Status-Status}' "$package" 2>/dev/null || true)
    [[ $status == installed ]] || browser+=("$package")
done
if ((${#browser[@]})); then
    echo "install.sh: installing ${browser[*]}"
    sudo=()
    [[ $(id -u) == 0 ]] || sudo=(sudo)
    "${sudo[@]}" apt-get update -q
    # Without them the browser test says it is skipped; the rest of the suite does not need them.
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${browser[@]}" \
        || echo "install.sh: chromium could not be installed: the dashboard's browser test will be skipped" >&2
fi
if ! python3 -c 'import selenium' 2>/dev/null; then
    echo "install.sh: installing selenium (PyPI)"
    python3 -m pip install -q 'selenium>=4.20,<5'
fi

if ! command -v swift >/dev/null && [[ -x /opt/swift/usr/bin/swift ]]; then
    PATH=/opt/swift/usr/bin:$PATH
fi
if ! command -v swift >/dev/null; then
    echo "install.sh: no swift on PATH (nor /opt/swift/usr/bin): install Swift 6.3 from https://swift.org/install" >&2
    exit 1
fi
if ! version=$(swift --version 2>&1); then
    echo "install.sh: 'swift --version' failed:" >&2
    echo "$version" >&2
    exit 1
fi
echo "install.sh: packages present; ${version%%$'\n'*}"
