#!/usr/bin/env bash
# Which async frames a held AI job keeps, and in how many of its task allocator's slabs (about 1 KB each, kept by
# the task until it ends): 200 chats (or analyses) through ONE `carbscan work --concurrency 100` against the slow
# model (1 s), with every task allocation logged by ops/bench/task_alloc_trace.c (LD_PRELOAD), then the deepest
# moment of one job's task printed by ops/bench/task_alloc_trace.py.
#   ops/bench/task-slabs.sh [--kind chat|analysis] [--bin-dir DIR]
# --bin-dir: where `carbscan` and `slow-provider` are (default: a release build of this tree). Needs gcc and the
# services of ops/services.sh (REDIS_URL, DATABASE_URL).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
kind=chat bin_dir=""
while (($#)); do
    case $1 in
        --kind) kind=$2; shift 2 ;;
        --bin-dir) bin_dir=$2; shift 2 ;;
        *) sed -n '2,8p' "$0" >&2; exit 64 ;;
    esac
done
# shellcheck source=ops/lib.sh
source ops/lib.sh
[[ -n $bin_dir ]] || release_build carbscan slow-provider
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gcc -O2 -shared -fPIC -o "$work/trace.so" ops/bench/task_alloc_trace.c -ldl
# A bin dir whose `carbscan work` runs under the tracing library; everything else is the real binary.
mkdir "$work/bin" "$work/traces"
cp "$bin_dir/slow-provider" "$work/bin/"
cat >"$work/bin/carbscan" <<WRAPPER
#!/usr/bin/env bash
if [[ \$1 == work ]]; then
    TASK_ALLOC_TRACE_DIR="$work/traces" LD_PRELOAD="$work/trace.so" exec "$bin_dir/carbscan" "\$@"
fi
exec "$bin_dir/carbscan" "\$@"
WRAPPER
chmod +x "$work/bin/carbscan"
ops/bench/slow-provider.sh --runs 1 --delays 1000 --kinds "$kind" --carbscan 100 --jobs 200 --sidekiq "" \
    --bin-dir "$work/bin" --out "$work/run.md" >&2
pkill -f "$bin_dir/carbscan work" 2>/dev/null || true
symbol=ChatJob write=ChatMessages.insertOnceCharging
[[ $kind == analysis ]] && symbol=AnalysisJob write=Meals.insertOnceCharging
trace=$(ls -S "$work"/traces/task-alloc.* | head -1)
# While the job waits on the model (the peak of a worker holding thousands), then over its whole life.
python3 ops/bench/task_alloc_trace.py "$bin_dir/carbscan" "$trace" "$symbol" "$write"
python3 ops/bench/task_alloc_trace.py "$bin_dir/carbscan" "$trace" "$symbol"
