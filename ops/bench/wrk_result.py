"""One wrk run's figures, for the benchmark scripts: `python3 ops/bench/wrk_result.py NAME WRK_OUTPUT` prints
`NAME requests_per_s p99_ms non2xx` (wrk run with --latency)."""
import re
import sys

name, path = sys.argv[1:3]
text = open(path).read()
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
value, unit = re.search(r"99%\s+([\d.]+)(us|ms|s)", text).groups()
p99 = float(value) * {"us": 0.001, "ms": 1, "s": 1000}[unit]
bad = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
print(name, rps, p99, bad.group(1) if bad else 0)
