#!/usr/bin/env bash
# Memory per outbound HTTP request in flight (issue 17: 10,000 AI calls in flight in one worker, RSS ≤ 256 MB).
# One `carbscan-bench http-inflight` process sends --requests POSTs at once through one HTTPClient to
# ops/bench/http_inflight_peer.py, which holds them all until every one is in flight, then --hold seconds more:
#   h1: cleartext HTTP/1.1, one connection per request (a local model server; per-host cap lifted for it);
#   h2: HTTPS, HTTP/2 by ALPN, 100 streams per connection as common providers allow (client defaults).
#   ops/bench/http-inflight.sh [--requests 10000] [--hold 5] [--bin PATH] [--label NAME]
# --bin: the carbscan-bench binary to measure (default: a release build of this tree).
# Prints each run's JSON and writes them to ops/bench/results/http-inflight-<date>[-label].json.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
requests=10000 hold=5 bin="" label=""
while (($#)); do
    case $1 in
        --requests) requests=$2; shift 2 ;;
        --hold) hold=$2; shift 2 ;;
        --bin) bin=$2; shift 2 ;;
        --label) label=$2; shift 2 ;;
        *) echo "usage: ops/bench/http-inflight.sh [--requests N] [--hold SECONDS] [--bin PATH] [--label NAME]" >&2; exit 64 ;;
    esac
done

# shellcheck source=ops/lib.sh
source ops/lib.sh
if [[ -z $bin ]]; then
    release_build carbscan-bench
    bin=$bin_dir/carbscan-bench
fi
python_tool hypercorn 'hypercorn>=0.17,<1'

# Each side holds a socket per HTTP/1.1 request: both need more than the usual 1,024 descriptors.
ulimit -n "$(ulimit -Hn)"
if (($(ulimit -n) < requests + 256)); then
    echo "http-inflight.sh: the open-file limit $(ulimit -n) is below $((requests + 256))" >&2
    exit 1
fi

work=$(mktemp -d)
peer=""
cleanup() {
    [[ -z $peer ]] || kill "$peer" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

# The h2 peer's certificate, issued by a CA of its own that the client is told to trust.
key=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
openssl req -x509 "${key[@]}" -subj "/CN=bench CA" -keyout "$work/ca.key" -out "$work/ca.pem" -days 1 2>/dev/null
openssl req "${key[@]}" -subj /CN=localhost -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
    -keyout "$work/key.pem" -out "$work/server.csr" 2>/dev/null
openssl x509 -req -in "$work/server.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" -CAcreateserial -copy_extensions copy \
    -out "$work/cert.pem" -days 1 2>/dev/null

out=ops/bench/results/http-inflight-$(date +%F)${label:+-$label}.json
echo "[" >"$out"
first=1
for mode in h1 h2; do
    port=$(free_port)
    if [[ $mode == h1 ]]; then
        "$venv/bin/python3" ops/bench/http_inflight_peer.py h1 "$port" "$requests" "$hold" 2>"$work/peer.log" &
        base=http://127.0.0.1:$port extra=(--max-connections-per-host 0)
    else
        "$venv/bin/python3" ops/bench/http_inflight_peer.py h2 "$port" "$requests" "$hold" "$work/cert.pem" "$work/key.pem" 100 2>"$work/peer.log" &
        base=https://localhost:$port extra=(--ca-bundle "$work/ca.pem")
    fi
    peer=$!
    until curl -sf --cacert "$work/ca.pem" "$base/stats" >/dev/null; do sleep 0.1; done
    echo "http-inflight.sh: $mode, $requests requests" >&2
    result=$(LOG_LEVEL=warning "$bin" http-inflight --url "$base/v1/chat/completions" --stats-url "$base/stats" \
        --requests "$requests" "${extra[@]}")
    echo "$result"
    ((first)) || echo "," >>"$out"
    first=0
    python3 -c 'import json, sys; r = json.loads(sys.argv[1]); r["mode"] = sys.argv[2]; print(json.dumps(r, sort_keys=True))' \
        "$result" "$mode" >>"$out"
    kill "$peer"
    wait "$peer" 2>/dev/null || true
    peer=""
done
echo "]" >>"$out"
echo "http-inflight.sh: wrote $out" >&2
