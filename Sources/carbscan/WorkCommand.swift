import AppStore
import ArgumentParser
import Foundation
import Logging
import Mail
import OutboundHTTP
import Push
import Queue
import ServiceLifecycle
import Settings
import Store
import Telemetry
import Workers

struct WorkCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "work", abstract: "Run a worker process (start as many as you like, on as many machines).")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var metrics: MetricsOptions

    @Option(
        help:
            "Queues to serve, each with an optional weight and limit: ai:3=500,default (weight 3, at most 500 at once; default: every queue, weighted by the kinds' priorities, limited by their files' queue_limit and --concurrency)."
    )
    var queues: String?

    /// 2500: a worker waiting 1 s on the AI model for each chat can finish 2,500 a second instead of 1,000. Two workers
    /// did 5,000 chats against a 1 s model at 2,543/s against 1,346/s at 1000, each at 104 MB instead of 74 MB
    /// (`ops/bench/same-work.sh`, 2026-11-27), and drained 50,000 noop jobs no slower (31,958 against 29,890 jobs/s,
    /// medians of 3 alternated runs of `ops/bench/concurrency.sh`). Jobs that keep a Postgres connection are held to
    /// their queues' limits (maintenance: 4); the AI kinds hold one only for a statement, and their answers share
    /// statements (group commit). The engine's own default (`WorkerOptions`) stays 1000.
    @Option(help: "Jobs run at once in this process.")
    var concurrency: Int = 2500

    /// 16: with the default limits (maintenance queue_limit 4) no job that keeps a connection waits for one, and
    /// two workers and the API stay well within Postgres's default max_connections of 100.
    @Option(help: "Postgres connections of this process (opened on first use).")
    var databasePool: Int = 16

    @Option(help: "Seconds in-flight jobs get to finish on SIGTERM before they are handed back.")
    var grace: Int = 25

    @Option(help: "Seconds the queues go without upkeep (promotion, reclaim) when the process running it dies.")
    var upkeepLease: Int = 10

    @Option(help: "Seconds between the process's beats in the registry (carbscan processes); it drops out after two missed.")
    var heartbeat: Double = 5

    @Flag(help: "Apply pending database migrations before working.")
    var migrate = false

    func validate() throws {
        guard concurrency >= 1 && concurrency <= 10_000 else { throw ValidationError("--concurrency must be 1…10000") }
        guard databasePool >= 1 && databasePool <= 1000 else { throw ValidationError("--database-pool must be 1…1000") }
        guard grace >= 0 else { throw ValidationError("--grace must be >= 0") }
        guard upkeepLease >= 1 && upkeepLease <= 3600 else { throw ValidationError("--upkeep-lease must be 1…3600") }
        guard heartbeat >= 0.1 && heartbeat <= 60 else { throw ValidationError("--heartbeat must be 0.1…60 seconds") }
    }

    func run() async throws {
        LogSetup.bootstrap()
        try await reportingErrors {
            let logger = Logger(label: "carbscan.worker")
            let tracing = try TracingSetup.bootstrap(serviceName: "carbscan-worker")
            // Connections open on first use: a worker serving only Redis-side kinds never needs Postgres.
            let database = try global.database(logger: logger, poolSize: databasePool)
            defer { database.shutdown() }
            if migrate { try await global.migrate(logger: logger) }
            let queue = try global.jobQueue(logger: logger)
            let (weights, overrides) = try parseQueues(queues, catalog: queue.catalog)
            FileDescriptors.raiseLimit(toServe: concurrency, logger: logger)
            // Metrics only with --metrics-port: without it the worker runs no instrumentation at all.
            let telemetry = metrics.metricsPort == nil ? nil : Telemetry.forProcess()
            if let telemetry { QueueMetrics.register(queue, on: telemetry) }
            let settings = try WorkerSettings(environment: .process)
            let mailer: SMTPMailer?
            do {
                mailer = try settings.smtpURL.map(SMTPMailer.init(url:))
            } catch {
                throw CLIError("configuration: \(error)", exitCode: 78)
            }
            try SettingChecks.scanResetZone(settings.scanResetTimeZone, catalog: queue.catalog)
            let observer = telemetry.map { HTTPClientMetrics(telemetry: $0) }
            let push = settings.push.map { APNsClient(settings: $0, logger: logger, observer: observer) }
            let fcm = settings.fcm.map { FCMClient(settings: $0, logger: logger, observer: observer) }
            defer {
                push?.shutdown()
                fcm?.shutdown()
            }
            logPushes(settings, logger: logger)
            let services = WorkerServices(
                redis: queue.redis, prefix: global.prefix, catalog: queue.catalog, database: database,
                http: outboundClient(logger: logger, observer: observer), settings: settings, logger: logger, mailer: mailer, push: push,
                fcm: fcm)
            let registry = Handlers.registry(services: services)
            let unhandled = queue.catalog.kinds.keys.filter { registry.handler(for: $0) == nil }.sorted()
            if !unhandled.isEmpty {
                logger.warning(
                    "job kinds without a handler in this build: their jobs go to the dead set", metadata: ["kinds": "\(unhandled)"])
            }
            let probe = AIModelProbe(services: services)
            let servesAnalyses = weights.contains { $0.name == queue.catalog[AnalysisJob.name]?.queue }
            Task { if let report = await probe.run() { probe.log(report, servesAnalyses: servesAnalyses, logger: logger) } }
            let served = weights.map(\.name)
            let limits = QueueLimits(served: served, catalog: queue.catalog, overrides: overrides)
            var options = WorkerOptions(
                queues: weights, concurrency: concurrency, queueLimits: limits.byQueue, gracePeriod: .seconds(grace),
                upkeepLease: .seconds(upkeepLease))
            // Reservations are settled and the outbox relayed by whichever worker runs the upkeep; a worker named no
            // database (only Redis-side kinds, e.g. a benchmark's) leaves that to those that were.
            if global.namesDatabase {
                options.settlingQuota(database: database, queue: queue, logger: logger)
            } else {
                logger.info("no DATABASE_URL: this worker neither settles reservations nor relays the job outbox")
            }
            let counters = ProcessCounters()
            options.observers.append(counters)
            if let telemetry { options.observers.append(JobMetrics(catalog: queue.catalog, telemetry: telemetry)) }
            // Analyses and chats that end with nobody waiting are pushed to their owners' devices (jobs/push.yml), when
            // pushes are configured here (the deploy kit gives every worker the same APNS_* and FCM_*).
            if queue.catalog[PushTrigger.pushKind] != nil, settings.push != nil || settings.fcm != nil {
                options.observers.append(PushTrigger(queue: queue, logger: logger))
            }
            let worker = Worker(queue: queue, registry: registry, options: options, logger: logger)
            telemetry?.addWorkerGauges(concurrency: concurrency) { worker.busy }
            let beacon = ProcessBeacon(
                queue: queue, worker: worker, counters: counters, interval: .milliseconds(Int64(heartbeat * 1000)),
                version: BuildVersion.current, logger: logger)
            let reload = SettingsReload(
                global: global, served: served, overrides: overrides, concurrency: concurrency, databasePool: databasePool,
                databaseBoundKinds: registry.databaseBoundKinds, worker: worker, logger: logger)
            reload.warnAbout(limits, catalog: queue.catalog)
            let reloading = await reload.start()
            defer { reloading.cancel() }
            // The beacon first: the group stops services in reverse, so it beats (as stopping) while the worker drains. A
            // worker that returns (`carbscan processes stop`) ends the group as a SIGTERM would.
            // The span exporter before them all: stopped last, it sends the spans of the jobs that ended in the drain.
            let group = ServiceGroup(
                configuration: .init(
                    services: TracingSetup.first(
                        tracing,
                        metrics.services(
                            [.init(service: beacon), .init(service: worker, successTerminationBehavior: .gracefullyShutdownGroup)],
                            telemetry: telemetry, logger: logger)),
                    gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
            try await group.run()
            queue.redis.close()
        }
    }
}

extension WorkCommand {
    /// The process's outbound client. Its per-host connection cap is at least the concurrency: a job makes one call at a
    /// time, so the cap never holds back an HTTP/1.1 provider (one call per connection) below what the worker runs,
    /// and it still bounds the connections an HTTP/2 burst opens. With the library's 256, one worker at
    /// --concurrency 1000 held 256 calls to a 1 s model and did 247 chats/s (ops/bench/slow-provider.sh).
    func outboundClient(logger: Logger, observer: (any HTTPClientObserver)? = nil) -> HTTPClient {
        HTTPClient(options: HTTPClientOptions(maxConnectionsPerHost: max(256, concurrency)), logger: logger, observer: observer)
    }
}

extension WorkCommand {
    /// Said once at start-up: whether `push` jobs reach APNs and FCM, and which (never a key).
    func logPushes(_ settings: WorkerSettings, logger: Logger) {
        if let apns = settings.push {
            logger.info(
                "pushes go to APNs",
                metadata: ["url": "\(apns.url)", "topic": "\(apns.topic)", "keyID": "\(apns.keyID)", "teamID": "\(apns.teamID)"])
        } else {
            logger.notice("pushes are off for iOS: APNS_KEY_PATH, APNS_KEY_ID, APNS_TEAM_ID and APNS_TOPIC are unset")
        }
        if let fcm = settings.fcm {
            logger.info(
                "pushes go to FCM", metadata: ["url": "\(fcm.url)", "project": "\(fcm.projectID)", "account": "\(fcm.clientEmail)"])
        } else {
            logger.notice("pushes are off for Android: FCM_SERVICE_ACCOUNT_FILE is unset")
        }
    }
}

/// `ai:3=500,default` → weights and limits; queues must exist in the catalog. Without the option: every queue,
/// weighted by the highest priority among its kinds (limits then come from the files alone).
func parseQueues(_ text: String?, catalog: JobCatalog) throws -> (weights: [(name: String, weight: Int)], limits: [String: Int]) {
    guard let text, !text.isEmpty else {
        let weights = catalog.queues.map { queue in
            (queue, catalog.kinds.values.filter { $0.queue == queue }.map(\.priority).max() ?? 1)
        }
        return (weights, [:])
    }
    var weights: [(name: String, weight: Int)] = []
    var limits: [String: Int] = [:]
    for item in text.split(separator: ",") {
        let sides = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        let limitText = sides.count == 2 ? sides[1] : nil
        let parts = sides[0].split(separator: ":", maxSplits: 1).map(String.init)
        let name = parts.first?.trimmingCharacters(in: .whitespaces) ?? ""
        guard catalog.queues.contains(name) else {
            throw CLIError("unknown queue '\(name)' (queues in jobs/: \(catalog.queues.joined(separator: ", ")))", exitCode: 64)
        }
        guard parts.count == 1 || Int(parts[1]).map({ $0 >= 1 }) == true else {
            throw CLIError("queue weight must be a whole number >= 1, got '\(parts[1])'", exitCode: 64)
        }
        if let limitText {
            guard let limit = Int(limitText), limit >= 1 && limit <= 100_000 else {
                throw CLIError("queue limit must be a whole number 1…100000, got '\(limitText)'", exitCode: 64)
            }
            limits[name] = limit
        }
        weights.append((name, parts.count == 2 ? Int(parts[1])! : 1))
    }
    return (weights, limits)
}
