import Logging
import Queue
import UnixSignals

/// `kill -HUP` a worker: it reads its job files again and applies the queues' new `queue_limit:` (the limits of its
/// `--queues` still win) and `global_limit:`. A lowered limit starts no job of the queue until fewer than it run; running jobs go on.
/// Other changes to the files take effect at the next start; files that do not load change nothing.
struct SettingsReload {
    let global: GlobalOptions
    let served: [String]
    let overrides: [String: Int]
    let concurrency: Int
    let databasePool: Int
    let databaseBoundKinds: Set<String>
    let worker: Worker
    let logger: Logger

    /// Traps SIGHUP now (its default action would end the process) and reloads at each one until the task is cancelled.
    func start() async -> Task<Void, Never> {
        let signals = await UnixSignalsSequence(trapping: .sighup)
        return Task { for await _ in signals { reload() } }
    }

    func reload() {
        let catalog: JobCatalog
        do {
            catalog = try global.catalog()
        } catch {
            logger.error("settings not reloaded: the job files do not load, the current limits stay", metadata: ["error": "\(error)"])
            return
        }
        let limits = QueueLimits(served: served, catalog: catalog, overrides: overrides)
        worker.setQueueLimits(limits.byQueue)
        worker.setGlobalLimits(catalog.globalLimits)
        logger.info(
            "settings reloaded",
            metadata: [
                "queue_limits": "\(Self.describe(limits.byQueue))", "global_limits": "\(Self.describe(worker.globalQueueLimits))",
            ])
        warnAbout(limits, catalog: catalog)
    }

    /// Logs what `limits` promise that this process cannot keep (at start-up and at each reload).
    func warnAbout(_ limits: QueueLimits, catalog: JobCatalog) {
        let warnings = limits.warnings(
            served: served, concurrency: concurrency, databasePool: databasePool, catalog: catalog,
            databaseBoundKinds: databaseBoundKinds)
        for warning in warnings {
            logger.warning("\(warning.message)", metadata: Logger.Metadata(uniqueKeysWithValues: warning.details.map { ($0, "\($1)") }))
        }
    }

    /// `ai=500,maintenance=4`, or `none`.
    static func describe(_ limits: [String: Int]) -> String {
        limits.isEmpty ? "none" : limits.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
    }
}
