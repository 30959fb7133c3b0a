#!/usr/bin/env python3
"""The async frame size of every async function in a Swift binary, largest first.

    python3 ops/bench/async_frames.py .build/release/carbscan [SUBSTRING]

Each async function has an "async function pointer" record (symbol suffix `Tu`): a relative pointer to the function
and the size of the context (frame) its caller allocates on the task's allocator. A job held in flight keeps the frame
of every async function on its path for as long as it waits, so these sizes are its memory (rounded up into the task
allocator's slabs of about 1 KB). Names are demangled with `swift demangle`; SUBSTRING keeps only matching lines.
"""
import struct
import subprocess
import sys


def sections(binary):
    out = subprocess.run(["readelf", "-SW", binary], capture_output=True, text=True, check=True).stdout
    found = []
    for line in out.splitlines():
        if "]" not in line or not line.strip().startswith("["):
            continue
        fields = line.split("]", 1)[1].split()
        if len(fields) < 5 or fields[0] == "Name" or fields[1] == "NOBITS":
            continue
        found.append((int(fields[2], 16), int(fields[3], 16), int(fields[4], 16)))
    return found


def main():
    binary = sys.argv[1]
    wanted = sys.argv[2] if len(sys.argv) > 2 else ""
    data = open(binary, "rb").read()
    layout = sections(binary)

    def read(address, count):
        for start, offset, size in layout:
            if start <= address < start + size:
                return data[offset + address - start : offset + address - start + count]
        return None

    symbols = subprocess.run(["nm", "--defined-only", binary], capture_output=True, text=True, check=True).stdout
    rows = []
    for line in symbols.splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[2].endswith("Tu"):
            record = read(int(fields[0], 16), 8)
            if record and len(record) == 8:
                rows.append((struct.unpack("<iI", record)[1], fields[2]))
    rows.sort(reverse=True)
    names = subprocess.run(
        ["swift", "demangle", "--simplified", "--compact"], input="\n".join(r[1] for r in rows), capture_output=True, text=True
    ).stdout.splitlines()
    for (size, _), name in zip(rows, names):
        name = name.removeprefix("async function pointer to ")
        if wanted in name:
            print(size, name)


if __name__ == "__main__":
    main()
