/// The names `/metrics` exports, fixed with the deploy kit and the dashboard (docs/operating-ops-metrics.md lists
/// them with their meanings). Base units, `_total` counters, `_seconds` histograms.
public enum MetricName {
    public static let queueJobs = "carbscan_queue_jobs"
    public static let queueLatency = "carbscan_queue_latency_seconds"
    public static let queuePaused = "carbscan_queue_paused"
    /// A queue's limit across worker processes (`global_limit:`), for queues that have one.
    public static let queueGlobalLimit = "carbscan_queue_global_limit"
    /// The permits of that limit live workers hold now.
    public static let queuePermitsHeld = "carbscan_queue_permits_held"
    public static let workersAlive = "carbscan_workers_alive"

    public static let jobsStarted = "carbscan_jobs_started_total"
    public static let jobsSucceeded = "carbscan_jobs_succeeded_total"
    public static let jobsFailed = "carbscan_jobs_failed_total"
    public static let jobsRetried = "carbscan_jobs_retried_total"
    public static let jobsDead = "carbscan_jobs_dead_total"
    public static let jobsPostponed = "carbscan_jobs_postponed_total"
    /// Jobs not started by their kind's `start_by` time (they ended `expired` without running).
    public static let jobsExpired = "carbscan_jobs_expired_total"
    public static let jobDuration = "carbscan_job_duration_seconds"

    public static let httpClientRequests = "carbscan_http_client_requests_total"
    public static let httpClientDuration = "carbscan_http_client_request_duration_seconds"
    public static let httpClientRateLimitWaits = "carbscan_http_client_rate_limit_waits_total"

    public static let apiRequests = "carbscan_api_requests_total"
    public static let apiDuration = "carbscan_api_request_duration_seconds"

    public static let workerBusySlots = "carbscan_worker_busy_slots"
    public static let workerConcurrency = "carbscan_worker_concurrency"
    public static let redisConnections = "carbscan_redis_connections"
    public static let redisReconnects = "carbscan_redis_reconnects_total"
    public static let postgresConnections = "carbscan_postgres_connections"
    public static let postgresReconnects = "carbscan_postgres_reconnects_total"
    public static let postgresPoolWaits = "carbscan_postgres_pool_waits_total"
    public static let postgresPoolWaitSeconds = "carbscan_postgres_pool_wait_seconds_total"
    /// Per read replica (`replica`: host:port/database): 1 while it is read, 0 while down, not in recovery or too far
    /// behind.
    public static let postgresReplicaHealthy = "carbscan_postgres_replica_healthy"
    /// Per read replica: how far behind the primary its last health check found it (NaN: not known, e.g. down).
    public static let postgresReplicaLag = "carbscan_postgres_replica_lag_seconds"
    /// The API's routed reads, by `target` (replica, primary) and `reason` (fresh, own_write, unhealthy).
    public static let postgresReads = "carbscan_postgres_reads_total"
    public static let buildInfo = "carbscan_build_info"
    public static let processStartTime = "carbscan_process_start_time_seconds"
}
