#!/usr/bin/env bash
# What a task-local costs a job's task by where it is bound (the worker binds a dropped trace's context, issue 31):
# compiles ops/bench/task_locals.swift with -O and runs it, 7 rounds of --tasks tasks per variant, interleaved.
#   ops/bench/task-locals.sh [--tasks 300000]
# Writes ops/bench/results/task-locals-<date>.md with the machine (BENCH_TAG=x: …-<date>-x).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
tasks=300000
while (($#)); do
    case $1 in
        --tasks) tasks=$2; shift 2 ;;
        *) sed -n '2,5p' "$0" >&2; exit 64 ;;
    esac
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
swiftc -O -parse-as-library ops/bench/task_locals.swift -o "$work/task-locals"
"$work/task-locals" "$tasks" >"$work/rows"
out=ops/bench/results/task-locals-$(date +%F)${BENCH_TAG:+-$BENCH_TAG}.md
python3 - "$out" "$tasks" "$work/rows" <<'PY'
import sys
sys.path.insert(0, "ops/bench")
import machine
out, tasks, rows = sys.argv[1], int(sys.argv[2]), [line.split("|") for line in open(sys.argv[3]).read().split("\n") if line]
base = float(rows[0][1])
lines = [f"# What a task-local costs a job's task, {out.split('task-locals-')[1][:10]}", "",
         f"Machine: {machine.describe()}.", "",
         f"`ops/bench/task-locals.sh`: {tasks:,} tasks a round, at most ~300 at once, 7 rounds a variant interleaved; the "
         "process's CPU per task (creating it, running a body that reads the value, ending it), median and rounds, in ns.", "",
         "| variant | median ns | over none | rounds |", "| --- | --- | --- | --- |"]
lines += [f"| {name} | {median} | {float(median) - base:+.0f} | {each} |" for name, median, each in rows]
open(out, "w").write("\n".join(lines) + "\n")
print(out)
PY
