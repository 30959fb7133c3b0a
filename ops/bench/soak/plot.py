#!/usr/bin/env python3
"""Usage: plot.py SAMPLES.csv EVENTS.txt OUT.png

The soak run's per-minute samples as one PNG: RSS (MiB), open file descriptors and threads of every process over
the run (x: minutes; y: log scale), one line per process name (a restarted worker continues its line with the new pid), with
the worker and Redis restarts from EVENTS.txt as vertical lines. Needs matplotlib (PyPI).
"""
import csv
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

samples, events, out = sys.argv[1:4]
series = defaultdict(lambda: defaultdict(list))  # process -> column -> values
for row in csv.DictReader(open(samples)):
    s = series[row["process"]]
    s["minute"].append(int(row["seconds"]) / 60)
    s["rss"].append(int(row["rss_kb"]) / 1024)
    s["fds"].append(int(row["fds"]))
    s["threads"].append(int(row["threads"]))
marks = []
for line in open(events):
    seconds, text = line.split(" ", 1)
    if "restarted" in text or "redis shut down" in text:
        marks.append((int(seconds) / 60, "red" if "redis" in text else "grey"))

figure, axes = plt.subplots(3, 1, figsize=(11, 11), sharex=True)
for axis, column, title in zip(axes, ["rss", "fds", "threads"],
                               ["RSS (MiB)", "open file descriptors", "threads (postgres: processes)"]):
    for name, s in sorted(series.items()):
        axis.plot(s["minute"], s[column], marker=".", label=name)
    for minute, colour in marks:
        axis.axvline(minute, color=colour, linestyle=":", linewidth=1)
    axis.set_ylabel(title)
    axis.set_yscale("log")  # Postgres (all its processes) is an order of magnitude above the rest
    axis.grid(alpha=0.3)
axes[0].legend(ncol=4, fontsize="small")
axes[0].set_title("CarbScan soak: every process per minute (grey: a worker restarted, red: Redis restarted)")
axes[-1].set_xlabel("minutes")
figure.tight_layout()
figure.savefig(out, dpi=100)
print(f"plot: {out}")
