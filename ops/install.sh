#!/usr/bin/env bash
# Usage: ops/install.sh — installs the Debian 12 packages the project needs (only those missing), the Python tools
# into .local/venv, and checks swift.
set -euo pipefail
# shellcheck source=ops/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# prometheus: its promtool checks the deploy kit's alert rules (ops/deploy/check.sh); the server is not run.
# tmux: ops/faults/run-cleanup.sh types Ctrl-C into ops/run.sh in a terminal.
# pgbouncer: the transaction pooler the pooled-database tests run through (ops/pgbouncer.sh).
# python3-venv: the Python tools' virtual environment (.local/venv); Debian's python3 has no venv module without it.
packages=(redis-server postgresql-15 pgbouncer libhiredis-dev libpq-dev libcurl4-openssl-dev libsodium-dev libcrypt-dev pkg-config procps curl openssl prometheus tmux python3-venv)

apt_install_missing install.sh "${packages[@]}"

# The browser test (ops/dashboard/run.sh): headless Chromium and its driver from Debian.
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

# The Python tools, from PyPI into .local/venv (ops/lib.sh), never into the system's Python.
python_tool aiosmtpd aiosmtpd                                          # the tests' local SMTP server
python_tool hypercorn 'hypercorn>=0.17,<1'                             # the client tests' and a benchmark's HTTP/2 server
python_tool cryptography 'cryptography>=42,<50'                        # the tests' APNs peer checks ES256 provider tokens
python_tool schemathesis 'schemathesis>=4.32,<5'                       # the API contract fuzzer (ops/contract.sh)
python_tool kubernetes_validate 'kubernetes-validate>=1.32,<2'         # the deploy kit's manifests (ops/deploy/check.sh)
python_tool yaml 'PyYAML>=6,<7'                                        # the deploy kit's structure checks (check.py)
python_tool selenium 'selenium>=4.20,<5'                               # the dashboard's browser test (ops/dashboard/run.sh)
# The tests' OTLP/HTTP receiver (Tests/TestSupport/otlp_receiver.py): OpenTelemetry's generated protobuf types. The
# module checked is one of them: the `opentelemetry` namespace alone is shared by every OpenTelemetry package.
python_tool opentelemetry.proto.collector.trace.v1.trace_service_pb2 'opentelemetry-proto>=1.27,<2'

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
