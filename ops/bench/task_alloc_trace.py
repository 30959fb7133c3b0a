#!/usr/bin/env python3
"""The deepest moment of a job's task, from a trace of ops/bench/task_alloc_trace.c.

    python3 ops/bench/task_alloc_trace.py BINARY TRACE [SUBSTRING [BEFORE]]

For the first task whose allocations name SUBSTRING (default ChatJob): its live task allocations at the moment they
were largest (before the first allocation by a function named like BEFORE, if given: e.g. the store's write after
the model answered, to see the job as it waits on the model), each with the function that made it (the caller of swift_task_alloc: usually the one whose callee's
frame it is), its size, and the slab of the task allocator it sits in (a slab is a 1,016-byte malloc holding about
984 bytes of allocations, 16-byte headers included; a task keeps every slab it ever took until it ends). The slabs
are worked out as the allocator fills them, from the sizes alone; the runtime's own allocations in the task (its
task-local values, copied into the first slab) are not seen, so the first slab may hold a little more than shown.
"""
import bisect
import collections
import subprocess
import sys


def symbols(binary):
    out = subprocess.run(["nm", "--defined-only", binary], capture_output=True, text=True, check=True).stdout
    found = sorted((int(a, 16), n) for a, t, n in (line.split(None, 2) for line in out.splitlines() if len(line.split()) == 3) if t in "tT")
    return [a for a, _ in found], [n for _, n in found]


def main():
    binary, trace = sys.argv[1], sys.argv[2]
    want = sys.argv[3] if len(sys.argv) > 3 else "ChatJob"
    before = sys.argv[4] if len(sys.argv) > 4 else None
    addresses, names = symbols(binary)
    tasks = collections.defaultdict(list)
    for line in open(trace):
        fields = line.split()
        tasks[fields[1]].append(fields)

    def name(location):
        file, _, offset = location.partition("+0x")
        if file != binary.rsplit("/", 1)[-1]:
            return location
        return names[bisect.bisect_right(addresses, int(offset, 16)) - 1]

    demangled = {}

    def readable(symbols):
        missing = [s for s in set(symbols) if s not in demangled]
        if missing:
            out = subprocess.run(["swift", "demangle", "--simplified"], input="\n".join(missing), capture_output=True, text=True).stdout
            demangled.update(zip(missing, out.splitlines()))
        return [demangled.get(s, s) for s in symbols]

    for task, events in tasks.items():
        if not any(want in label for label in readable([name(f[3]) for f in events if f[0] == "A"])):
            continue
        live, deepest, most = [], [], 0
        for fields in events:
            if fields[0] == "A" and before and before in readable([name(fields[3])])[0]:
                break
            if fields[0] == "A":
                live.append((int(fields[2]), name(fields[3]), int(fields[4], 16)))
            else:
                address = int(fields[2], 16)
                for i in range(len(live) - 1, -1, -1):
                    if live[i][2] == address:
                        live[i:] = [] if fields[0] == "T" else live[i + 1:]
                        break
            if sum(size for size, _, _ in live) > most:
                most, deepest = sum(size for size, _, _ in live), list(live)
        labels = readable([n for _, n, _ in deepest])
        moment = f"before {before}" if before else "over its life"
        print(f"task {task}: {len(deepest)} allocations, {most} bytes at its deepest {moment}")
        for (size, _, _), label, slab in zip(deepest, labels, slabs([size for size, _, _ in deepest])):
            print(f"  slab {slab}  {size:5d}  {label[:110]}")
        return
    sys.exit(f"no task with an allocation by a function named like {want!r}")


def slabs(sizes, capacity=984, header=16):
    """The slab of each allocation of a stack of them, as the task allocator (swift/stdlib/public/runtime/
    StackAllocator.h) places them: in the current slab while it has room, else in the next."""
    placed, slab, used = [], 1, 0
    for size in sizes:
        need = size + header
        if used + need > capacity and used > 0:
            slab, used = slab + 1, 0
        used += need
        placed.append(slab)
    return placed


if __name__ == "__main__":
    main()
