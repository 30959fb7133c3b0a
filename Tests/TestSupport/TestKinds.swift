/// Job kind files the tests write into their own catalogs.
public enum TestKinds {
    /// noop as tests need it: short leases, three attempts with fast fixed retries, any payload.
    public static let noop = """
        queue: default
        timeout: 5s
        visibility_timeout: 3s
        attempts: 3
        backoff: { type: fixed, delay: 100ms }
        retention: { succeeded: 1h, failed: 1d }
        """
}
