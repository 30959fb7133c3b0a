"""Counts the commands idle workers send to Redis, from `redis-cli monitor` output on stdin, for `upkeep.sh`.

Every top-level command is counted once; a script call (EVALSHA) is named by the first command it runs inside
Redis other than TIME (the `[0 lua]` lines that follow it), so `EVALSHA/ZRANGEBYSCORE` is the promote script and
`EVALSHA/XPENDING` the reclaim script. Prints `calls/s<TAB>command` lines, busiest first, then the total.
"""

import re
import sys
from collections import Counter

seconds = float(sys.argv[1])
line_pattern = re.compile(r'^\d+\.\d+ \[\d+ ([^\]]+)\] "([^"]+)"')
counts = Counter()
script = None  # the script call whose inner commands are being read: [name, first inner command]


def close_script():
    if script is not None:
        counts[f"{script[0]}/{script[1] or '(no command)'}"] += 1


for line in sys.stdin:
    match = line_pattern.match(line)
    if not match:
        continue
    client, command = match.group(1), match.group(2).upper()
    if client == "lua":
        if script is not None and script[1] is None and command != "TIME":
            script[1] = command
        continue
    close_script()
    script = [command, None] if command in ("EVALSHA", "EVAL") else None
    if script is None:
        counts[command] += 1
close_script()

for command, count in counts.most_common():
    print(f"{count / seconds:.2f}\t{command}")
print(f"{sum(counts.values()) / seconds:.2f}\ttotal")
