/// How long to wait before trying Redis again after `failures` consecutive failures: 100 ms doubling to 5 s.
func retryDelay(afterFailures failures: Int) -> Duration {
    .milliseconds(min(5000, 100 << min(max(failures, 1) - 1, 6)))
}
