"""The machine's description for a benchmark report: CPU, cores, memory, kernel, Redis and Swift versions (and any
extra tool's version line). Imported by the report writers (`sys.path.insert(0, "ops/bench")`), or run alone."""
import platform
import subprocess
import sys


def sh(command):
    try:
        return subprocess.run(command, shell=True, capture_output=True, text=True).stdout.strip()
    except Exception:
        return "?"


def describe(*extra_commands):
    cpu = sh("lscpu | sed -n 's/^Model name: *//p'") or platform.processor()
    memory = sh("free -g | awk '/Mem:/{print $2}'")
    redis = sh("redis-server --version | cut -d' ' -f3")
    parts = [cpu, f"{sh('nproc')} cores", f"{memory} GiB", f"{platform.system()} {platform.release()}", f"Redis {redis}",
             sh("swift --version 2>&1 | head -1")]
    parts += [sh(command) for command in extra_commands]
    return ", ".join(part for part in parts if part)


if __name__ == "__main__":
    print(describe(*sys.argv[1:]))
