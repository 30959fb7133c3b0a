import Foundation
import JSON
import Queue
import Redis
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `GET /metrics` as operators scrape it from the real processes: a worker after a known sequence of jobs, the
/// scheduler's queue latency, and the API's requests by route template.
@Suite struct MetricsTests {
    /// Noop with fast fixed retries, so a job that always fails is dead within a second.
    static let noop = TestKinds.noop + "\npayload: { type: object }"
    /// Set in the processes' environment; must never appear in a scrape.
    static let canary = "sk-canary-\(UUID().uuidString)"

    static func scrape(_ port: Int) async throws -> (status: Int, text: String) {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)/metrics")!)
        request.timeoutInterval = 10
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
    }

    /// The sample `name{labels}`'s value, labels in the order the exposition writes them.
    static func value(_ text: String, _ series: String) -> Double? {
        for line in text.split(separator: "\n") where line.hasPrefix(series + " ") {
            return Double(line.dropFirst(series.count + 1))
        }
        return nil
    }

    static func setUp(prefix: String) throws -> (jobs: URL, queue: JobQueue) {
        let jobs = try CarbScanBinary.jobsDirectory(noop: noop)
        let queue = JobQueue(
            redis: try RedisClient(url: TestServices.redisURL), catalog: try JobCatalog.load(directory: jobs.path),
            options: QueueOptions(prefix: prefix))
        return (jobs, queue)
    }

    @Test(.timeLimit(.minutes(2)))
    func aWorkersCountersAfterAKnownSequenceOfJobs() async throws {
        let prefix = "metrics-\(UUID().uuidString.prefix(8))"
        let (jobs, queue) = try Self.setUp(prefix: prefix)
        defer { Task { _ = try? await queue.redis.unlinkKeys(matching: prefix + ":*") } }
        let port = CarbScanBinary.freePort()
        let worker = try CarbScanBinary.start(
            ["work", "--queues", "default", "--concurrency", "4", "--metrics-port", String(port)],
            environment: [
                "CARBSCAN_JOBS_DIR": jobs.path, "CARBSCAN_PREFIX": prefix, "REDIS_URL": TestServices.redisURL,
                "AI_API_KEY": Self.canary, "STRIPE_SECRET_KEY": Self.canary,
            ])
        defer { worker.signal(SIGKILL) }
        #expect(try await eventually(timeout: .seconds(30)) { worker.output.contains("serving metrics") }, "\(worker.output)")
        var ids: [JobID] = []
        for payload: JSONValue in [[:], [:], ["fail": "permanent"], ["fail": "retry"]] {
            ids.append(try #require(try await queue.enqueue("noop", payload: payload).id))
        }
        #expect(
            try await eventually(timeout: .seconds(30)) {
                let stats = try #require(try await queue.stats().first { $0.queue == "default" })
                return stats.dead == 2 && stats.succeededTotal == 2
            })
        let (status, text) = try await Self.scrape(port)
        #expect(status == 200)
        let job = #"{queue="default",kind="noop"}"#
        #expect(Self.value(text, "carbscan_jobs_started_total" + job) == 6, "\(text)")
        #expect(Self.value(text, "carbscan_jobs_succeeded_total" + job) == 2)
        #expect(Self.value(text, "carbscan_jobs_failed_total" + job) == 4)
        #expect(Self.value(text, "carbscan_jobs_retried_total" + job) == 2)
        #expect(Self.value(text, "carbscan_jobs_dead_total" + job) == 2)
        #expect(Self.value(text, "carbscan_job_duration_seconds_count" + job) == 6)
        #expect(Self.value(text, #"carbscan_queue_jobs{queue="default",state="dead"}"#) == 2)
        #expect(Self.value(text, #"carbscan_queue_latency_seconds{queue="default"}"#) == 0)
        #expect(Self.value(text, #"carbscan_queue_paused{queue="default"}"#) == 0)
        #expect(Self.value(text, "carbscan_worker_concurrency") == 4)
        // Every kind of the catalog is there from the start, at zero.
        #expect(Self.value(text, #"carbscan_jobs_started_total{queue="ai",kind="chat"}"#) == 0)
        for id in ids { #expect(!text.contains(id.rawValue)) }
        #expect(!text.contains(Self.canary))
        #expect(!text.contains("redis://"))
        worker.signal(SIGTERM)
        #expect(await worker.waitForExit(timeout: .seconds(15)) == 0, "\(worker.output)")
    }

    /// The scheduler runs no jobs but exports the queue gauges: a job no worker takes waits, and its latency is its age.
    @Test(.timeLimit(.minutes(1)))
    func theSchedulerReportsTheLatencyOfAWaitingJob() async throws {
        let prefix = "metrics-\(UUID().uuidString.prefix(8))"
        let (jobs, queue) = try Self.setUp(prefix: prefix)
        defer { Task { _ = try? await queue.redis.unlinkKeys(matching: prefix + ":*") } }
        let port = CarbScanBinary.freePort()
        let scheduler = try CarbScanBinary.start(
            ["schedule", "--metrics-port", String(port)],
            environment: ["CARBSCAN_JOBS_DIR": jobs.path, "CARBSCAN_PREFIX": prefix, "REDIS_URL": TestServices.redisURL])
        defer { scheduler.signal(SIGKILL) }
        #expect(try await eventually(timeout: .seconds(30)) { scheduler.output.contains("serving metrics") }, "\(scheduler.output)")
        let enqueued = ContinuousClock.now
        _ = try await queue.enqueue("noop", payload: [:])
        _ = try await queue.enqueue("noop", payload: [:], options: EnqueueOptions(delay: .seconds(600)))
        try await Task.sleep(for: .milliseconds(1500))
        let (status, text) = try await Self.scrape(port)
        let age = ContinuousClock.now - enqueued
        let (seconds, attoseconds) = age.components
        let ageSeconds = Double(seconds) + Double(attoseconds) / 1e18
        #expect(status == 200)
        let latency = try #require(Self.value(text, #"carbscan_queue_latency_seconds{queue="default"}"#), "\(text)")
        #expect(latency >= 1.3 && latency <= ageSeconds + 0.2, "latency \(latency), age \(ageSeconds)")
        #expect(Self.value(text, #"carbscan_queue_jobs{queue="default",state="queued"}"#) == 1)
        #expect(Self.value(text, #"carbscan_queue_jobs{queue="default",state="scheduled"}"#) == 1)
        #expect(Self.value(text, "carbscan_worker_busy_slots") == nil)
        scheduler.signal(SIGTERM)
        #expect(await scheduler.waitForExit(timeout: .seconds(15)) == 0, "\(scheduler.output)")
    }

    /// The API counts requests by route template (an id in the path never becomes a label; an unknown path is
    /// `unmatched`) and answers /metrics on its own port, without auth; `--no-metrics` turns it off. Traced (every
    /// request sampled, or none), the server span's layer counts them in its place.
    @Test(.timeLimit(.minutes(2)), arguments: [nil, "always_on", "always_off"])
    func serveCountsRequestsByRouteTemplate(sampler: String?) async throws {
        try await withScratchDatabase { url in
            let port = CarbScanBinary.freePort()
            var environment = ["DATABASE_URL": url, "JWT_SECRET": Self.canary + Self.canary]
            if let sampler {
                // Nothing listens there: the exporter's failures are only logged.
                environment["OTEL_EXPORTER_OTLP_ENDPOINT"] = "http://127.0.0.1:9"
                environment["OTEL_TRACES_SAMPLER"] = sampler
            }
            let server = try CarbScanBinary.start(["serve", "--port", String(port), "--migrate"], environment: environment)
            defer { server.signal(SIGKILL) }
            func get(_ path: String, on other: Int? = nil) async -> Int? {
                var request = URLRequest(url: URL(string: "http://127.0.0.1:\(other ?? port)" + path)!)
                request.setValue("Bearer \(Self.canary)", forHTTPHeaderField: "Authorization")
                return ((try? await URLSession.shared.data(for: request))?.1 as? HTTPURLResponse)?.statusCode
            }
            #expect(try await eventually(timeout: .seconds(60)) { await get("/api/mobile/v1/health") == 200 }, "\(server.output)")
            let job = "01JQZ0METRICS0TEST0JOB0ID1"
            #expect(await get("/api/mobile/v1/jobs/\(job)") == 401)
            #expect(await get("/api/mobile/v1/jobs/\(job)x") == 401)
            #expect(await get("/no/such/\(job)") == 404)
            let (status, text) = try await Self.scrape(port)
            #expect(status == 200)
            #expect(
                Self.value(text, #"carbscan_api_requests_total{route="/api/mobile/v1/jobs/:id",method="GET",status="401"}"#) == 2,
                "\(text)")
            #expect(Self.value(text, #"carbscan_api_requests_total{route="unmatched",method="GET",status="404"}"#) == 1)
            #expect(Self.value(text, #"carbscan_api_request_duration_seconds_count{route="/api/mobile/v1/jobs/:id",method="GET"}"#) == 2)
            #expect((Self.value(text, #"carbscan_postgres_connections{state="open"}"#) ?? 0) >= 1)
            #expect(!text.contains(job))
            #expect(!text.contains(Self.canary))
            server.signal(SIGTERM)
            _ = await server.waitForExit(timeout: .seconds(15))

            let quiet = CarbScanBinary.freePort()
            let unmeasured = try CarbScanBinary.start(
                ["serve", "--port", String(quiet), "--no-metrics"],
                environment: ["DATABASE_URL": url, "JWT_SECRET": Self.canary + Self.canary])
            defer { unmeasured.signal(SIGKILL) }
            #expect(
                try await eventually(timeout: .seconds(60)) { await get("/api/mobile/v1/health", on: quiet) == 200 }, "\(unmeasured.output)"
            )
            #expect(await get("/metrics", on: quiet) == 404)
        }
    }

    @Test(arguments: [
        (["work", "--metrics-port", "70000"], "--metrics-port must be 0…65535"),
        (["schedule", "--metrics-port", "65536"], "--metrics-port must be 0…65535"),
        (["serve", "--no-metrics", "--metrics-port", "9464"], "exclude each other"),
    ])
    func badMetricsOptionsAreRefused(arguments: [String], message: String) async throws {
        let result = try await CarbScanBinary.run(arguments, environment: [:], timeout: .seconds(20))
        #expect(result.status == 64, "\(result.stderr)")
        #expect(result.stderr.contains(message), "\(result.stderr)")
    }
}
