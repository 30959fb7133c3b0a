import CoreMetrics
import Metrics
import OutboundHTTP
import Synchronization

/// Outbound calls per provider (`HTTPRequest.provider`): counts by outcome class, a duration histogram and rate-limit
/// waits. Providers are a handful of fixed names; their handles are made on first use and kept.
package final class HTTPClientMetrics: HTTPClientObserver {
    static let outcomes = ["2xx", "3xx", "4xx", "5xx", "timeout", "error"]

    struct Handles: Sendable {
        /// By the index of the outcome in `outcomes`.
        var requests: [Counter]
        var duration: CoreMetrics.Timer
        var rateLimitWaits: Counter
    }

    private let factory: any MetricsFactory
    private let byProvider = Mutex<[String: Handles]>([:])

    package init(telemetry: Telemetry) {
        factory = telemetry.factory
    }

    func handles(_ provider: String) -> Handles {
        byProvider.withLock { byProvider in
            if let handles = byProvider[provider] { return handles }
            let handles = Handles(
                requests: Self.outcomes.map {
                    Counter(label: MetricName.httpClientRequests, dimensions: [("provider", provider), ("outcome", $0)], factory: factory)
                },
                duration: CoreMetrics.Timer(label: MetricName.httpClientDuration, dimensions: [("provider", provider)], factory: factory),
                rateLimitWaits: Counter(label: MetricName.httpClientRateLimitWaits, dimensions: [("provider", provider)], factory: factory))
            byProvider[provider] = handles
            return handles
        }
    }

    /// The outcome class: the status's hundreds (1xx counts with 2xx), or a timeout, or any other failure.
    static func outcomeIndex(status: Int?, error: HTTPClientError.Code?) -> Int {
        if let status {
            switch status {
            case ..<300: return 0
            case 300..<400: return 1
            case 400..<500: return 2
            default: return 3
            }
        }
        return error == .timeout ? 4 : 5
    }

    package func requestFinished(provider: String, status: Int?, error: HTTPClientError.Code?, duration: Duration) {
        let handles = handles(provider)
        handles.requests[Self.outcomeIndex(status: status, error: error)].increment()
        let (seconds, attoseconds) = duration.components
        handles.duration.recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }

    package func rateLimitWaited(provider: String) {
        handles(provider).rateLimitWaits.increment()
    }
}
