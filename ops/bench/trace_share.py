"""The share of one process's CPU spent in tracing code, from `perf script -F comm,ip,sym` of a `perf record -g` on it.

Reads the stacks on stdin and prints one JSON object: the samples, those with a tracing frame anywhere in their stack,
their share in percent, and the biggest of them by their outermost tracing frame. A sample counts when a frame belongs
to the project's tracing (the Traces and TraceExport modules, the API's server span middleware, a traced enqueue, the
trace ids a log line carries: `LoggedTrace`, or `TracingSetup`'s metadata provider before 2026-11-29) or
to swift-distributed-tracing's own types, or when it ran on the exporter's HTTP thread (`carbscan.otlp`; the other
HTTP clients' threads, `carbscan.http`, run the same code for the model's calls): what tracing adds to the process, measured
directly, where the rate and CPU-per-request comparisons of `tracing.sh` are within this machine's noise (±10% a run).
Async code's stacks hold only the running partial function, so a span around a request counts only its own work,
not the request's. Where the traced work runs synchronously inside a span's frame (a sampled job's handler and its
`finish`, a traced enqueue's own enqueue), the frame nearest the sample decides: that work is not tracing's."""
import collections, json, re, sys

TRACING = re.compile(
    r"6Traces|11TraceExport|7Tracing|ServerSpanMiddleware|tracedEnqueue|15Instrumentation0A7ContextV6Traces|TracingSetup")
EXPORTER_THREAD = "carbscan.otlp"
# The work a span is around, when it runs inside the span's frame: the job's handler and its end, the enqueue itself.
# Also the job's own task (`execute`, `spawn`), whose symbols name the sampler's parent type among their parameters,
# and the context its handler is given.
TRACED_WORK = re.compile(r"WorkerC6finish|JobRegistry|enqueueOne|WorkerC7execute|WorkerC5spawn|WorkerC7context")


def main():
    total = hit = 0
    outermost = collections.Counter()
    stack = []
    thread = ""

    def done():
        nonlocal total, hit
        if not stack:
            return
        total += 1
        if thread == EXPORTER_THREAD:
            hit += 1
            outermost["the exporter's HTTP thread"] += 1
            return
        # perf lists a sample's frames leaf first.
        nearest = next((frame for frame in stack if TRACED_WORK.search(frame) or TRACING.search(frame)), None)
        if nearest is not None and not TRACED_WORK.search(nearest):
            hit += 1
            outermost[[frame for frame in stack if TRACING.search(frame)][-1][:100]] += 1

    for line in sys.stdin:
        line = line.rstrip("\n")
        if not line.strip():
            done()
            stack.clear()
        elif line.startswith((" ", "\t")):
            parts = line.split(None, 1)
            if len(parts) == 2:
                stack.append(parts[1])
        else:
            # A sample's header line: its thread's name (comm) first.
            thread = line.split()[0]
    done()
    print(json.dumps({
        "samples": total, "tracing_samples": hit, "share_pct": round(100 * hit / total, 2) if total else None,
        "top": [[frame, round(100 * count / total, 2)] for frame, count in outermost.most_common(5)],
    }))


if __name__ == "__main__":
    main()
