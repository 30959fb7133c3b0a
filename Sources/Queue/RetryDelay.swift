/// How long to wait before trying Redis again after `failures` consecutive failures: 100 ms doubling to 1 s.
/// The cap bounds how long a worker stays idle after Redis returns (it was 5 s: recovery took 3–6 s).
func retryDelay(afterFailures failures: Int) -> Duration {
    .milliseconds(min(1000, 100 << min(max(failures, 1) - 1, 4)))
}
