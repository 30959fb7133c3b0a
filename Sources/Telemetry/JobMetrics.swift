import CoreMetrics
import Metrics
import Queue
import Synchronization

/// Per-kind job counters and the duration histogram, fed by the worker's observer seam. The handles of every kind in
/// the catalog are made up front, so a job's start or end costs one lookup in an immutable dictionary and an atomic
/// add; a kind outside the catalog (an entry written by hand) gets its handles once, under a lock, at most
/// `maxOtherKinds` of them before they all count as kind `other`.
public final class JobMetrics: WorkerObserver {
    /// A class, so a job's lookup hands out one reference, not a struct of eight to retain and release.
    final class Handles: Sendable {
        let queue: String
        let started, succeeded, failed, retried, dead, postponed, expired: Counter
        let duration: CoreMetrics.Timer

        init(queue: String, kind: String, factory: any MetricsFactory) {
            self.queue = queue
            let labels = [("queue", queue), ("kind", kind)]
            started = Counter(label: MetricName.jobsStarted, dimensions: labels, factory: factory)
            succeeded = Counter(label: MetricName.jobsSucceeded, dimensions: labels, factory: factory)
            failed = Counter(label: MetricName.jobsFailed, dimensions: labels, factory: factory)
            retried = Counter(label: MetricName.jobsRetried, dimensions: labels, factory: factory)
            dead = Counter(label: MetricName.jobsDead, dimensions: labels, factory: factory)
            postponed = Counter(label: MetricName.jobsPostponed, dimensions: labels, factory: factory)
            expired = Counter(label: MetricName.jobsExpired, dimensions: labels, factory: factory)
            duration = CoreMetrics.Timer(label: MetricName.jobDuration, dimensions: labels, factory: factory)
        }
    }

    static let maxOtherKinds = 50
    private let factory: any MetricsFactory
    private let byKind: [String: Handles]
    private let others = Mutex<[String: Handles]>([:])

    /// Handles for every kind of `catalog` on its queue, exported as zeros until jobs run.
    public init(catalog: JobCatalog, telemetry: Telemetry) {
        factory = telemetry.factory
        var byKind: [String: Handles] = [:]
        for (name, spec) in catalog.kinds { byKind[name] = Handles(queue: spec.queue, kind: name, factory: telemetry.factory) }
        self.byKind = byKind
    }

    func handles(kind: String, queue: String) -> Handles {
        if let handles = byKind[kind], handles.queue == queue { return handles }
        return others.withLock { others in
            let key = queue + "\u{0}" + kind
            if let handles = others[key] { return handles }
            let bounded = others.count < Self.maxOtherKinds ? kind : "other"
            let handles = Handles(queue: queue, kind: bounded, factory: factory)
            if bounded == kind { others[key] = handles }
            return handles
        }
    }

    public func jobStarted(kind: String, queue: String) {
        handles(kind: kind, queue: queue).started.increment()
    }

    public func jobFinished(kind: String, queue: String, outcome: JobEnd, duration: Duration) {
        let handles = handles(kind: kind, queue: queue)
        switch outcome {
        case .succeeded: handles.succeeded.increment()
        case .retried:
            handles.failed.increment()
            handles.retried.increment()
        case .dead:
            handles.failed.increment()
            handles.dead.increment()
        case .postponed: handles.postponed.increment()
        case .expired:
            handles.expired.increment()
            return
        // Handed back at shutdown, or cancelled by an operator: neither a success nor a failure, its run cut short.
        case .handedBack, .cancelled: return
        }
        let (seconds, attoseconds) = duration.components
        handles.duration.recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
