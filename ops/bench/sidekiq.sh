#!/usr/bin/env bash
# Sidekiq 6.4 reference benchmark (see sidekiq/bench.rb for the definitions).
#   ops/bench/sidekiq.sh [--runs N]
# Env: REDIS_URL (default redis://127.0.0.1:56379/0); the bench uses and FLUSHES
# SIDEKIQ_BENCH_REDIS_URL (default: REDIS_URL with db 15) and nothing else.
# JSON result on stdout, logs on stderr.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

if ! dpkg-query -W -f='${Status}' ruby-sidekiq 2>/dev/null | grep -q 'install ok installed'; then
  echo "[sidekiq.sh] installing ruby-sidekiq" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq ruby-sidekiq; } 1>&2
fi

cd "$here/sidekiq"
exec ruby bench.rb "$@"
