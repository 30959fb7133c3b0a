#!/usr/bin/env bash
# Usage: ops/deploy/check.sh [--binary PATH] — validates the deploy kit as far as this machine allows (a few seconds):
# every YAML and JSON file parses; check.py's structure checks (metric names, CLI flags against `--help`, probes,
# grace periods, selectors, KEDA targets); `promtool check rules` and `promtool test rules`, and every KEDA and
# Grafana query parsed by promtool; the Kubernetes objects against the API schemas (kubernetes-validate, PyPI) and
# rendered by `kubectl kustomize`; `systemd-analyze verify` on the units. A validator that is not installed is
# skipped with a line saying so (ops/install.sh installs promtool and kubernetes-validate). ops/test.sh runs this
# after the suite; the test that runs the units' ExecStart lines is Tests/SystemTests/DeployUnitsTests.swift.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
# shellcheck source=ops/lib.sh
source ops/lib.sh
binary=.build/debug/carbscan
while (($#)); do
    case $1 in
        --binary) binary=$2; shift 2 ;;
        *) echo "check.sh: unknown argument $1" >&2; exit 64 ;;
    esac
done
require_binary "$binary"
binary=$(readlink -f "$binary")
kit=ops/deploy
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
skipped=()

"$venv/bin/python3" -c 'import yaml' 2>/dev/null || { echo "check.sh: no PyYAML in $venv (ops/install.sh installs it)" >&2; exit 69; }
"$venv/bin/python3" "$kit/check.py" "$binary" "$work/queries.yml"

if command -v promtool >/dev/null; then
    promtool check rules "$kit/prometheus/alerts.yml" "$work/queries.yml" >"$work/promtool.log" 2>&1 || { cat "$work/promtool.log" >&2; exit 1; }
    promtool test rules "$kit/prometheus/alerts-test.yml" >"$work/promtool.log" 2>&1 || { cat "$work/promtool.log" >&2; exit 1; }
    echo "check.sh: promtool: alert rules, their unit test and the KEDA and Grafana queries pass"
else
    skipped+=("promtool (Debian package prometheus)")
fi

if [[ -x $venv/bin/kubernetes-validate ]]; then
    # Strict: unknown fields are errors. KEDA's kinds have no schema here: check.py checks their structure.
    manifests=()
    for file in "$kit"/kubernetes/*.yaml; do [[ $(basename "$file") == kustomization.yaml ]] || manifests+=("$file"); done
    "$venv/bin/kubernetes-validate" --strict --quiet --no-warn -k 1.32 "${manifests[@]}" || { echo "check.sh: a manifest does not validate" >&2; exit 1; }
    echo "check.sh: kubernetes-validate: every object matches the Kubernetes 1.32 schemas"
else
    skipped+=("kubernetes-validate (PyPI)")
fi
if command -v kubectl >/dev/null; then
    kubectl kustomize "$kit/kubernetes" >"$work/rendered.yaml"
    echo "check.sh: kubectl kustomize renders $(grep -c '^kind:' "$work/rendered.yaml") objects"
else
    skipped+=("kubectl kustomize")
fi

if command -v systemd-analyze >/dev/null; then
    # verify needs every ExecStart binary and EnvironmentFile to exist: the units with the built binary, a scratch
    # environment file and working directory substituted. A warning (an unknown key, a typo) fails the check too.
    mkdir "$work/units" "$work/opt"
    : >"$work/env"
    for unit in "$kit"/systemd/*.service; do
        sed -e "s#/usr/local/bin/carbscan#$binary#g" -e "s#/etc/carbscan/env#$work/env#g" \
            -e "s#/etc/carbscan/#$work/#g" -e "s#/opt/carbscan#$work/opt#g" "$unit" >"$work/units/$(basename "$unit")"
    done
    (cd "$work/units" && systemd-analyze verify carbscan-api.service carbscan-scheduler.service carbscan-worker@check.service \
        $(command -v pgbouncer >/dev/null && echo carbscan-pgbouncer.service)) \
        >"$work/verify.log" 2>&1 || true
    if [[ -s $work/verify.log ]]; then
        echo "check.sh: systemd-analyze verify:" >&2
        cat "$work/verify.log" >&2
        exit 1
    fi
    exposure=$(cd "$work/units" && systemd-analyze security --offline=true carbscan-worker@check.service 2>/dev/null | tail -n 1 || true)
    echo "check.sh: systemd-analyze verify: the units pass; ${exposure#→ }"
else
    skipped+=("systemd-analyze (Debian package systemd)")
fi

for tool in "${skipped[@]}"; do echo "check.sh: SKIPPED, not installed: $tool"; done
echo "check.sh: the deploy kit checks pass"
