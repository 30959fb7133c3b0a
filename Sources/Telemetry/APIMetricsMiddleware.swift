import CoreMetrics
import Hummingbird
import Metrics
import Synchronization

/// Counts the API's requests by route template, method and status, with a duration histogram by route and method.
/// The route is the template the router matched (`/api/mobile/v1/jobs/:id`), never the path, so ids never become
/// labels; a request no route matched counts as `unmatched`, a method outside the usual ones as `OTHER`.
public struct APIMetricsMiddleware<Context: RequestContext>: RouterMiddleware {
    final class Cache: Sendable {
        struct Key: Hashable {
            var endpoint: String?
            var method: String
            var status: Int
        }

        struct Handles: Sendable {
            var requests: Counter
            var duration: CoreMetrics.Timer
        }

        let factory: any MetricsFactory
        let handles = Mutex<[Key: Handles]>([:])

        init(factory: any MetricsFactory) { self.factory = factory }

        func handles(_ key: Key) -> Handles {
            handles.withLock { cache in
                if let handles = cache[key] { return handles }
                let route = APIMetricsMiddleware.route(key.endpoint)
                let handles = Handles(
                    requests: Counter(
                        label: MetricName.apiRequests,
                        dimensions: [("route", route), ("method", key.method), ("status", String(key.status))],
                        factory: factory),
                    duration: CoreMetrics.Timer(
                        label: MetricName.apiDuration, dimensions: [("route", route), ("method", key.method)], factory: factory))
                cache[key] = handles
                return handles
            }
        }
    }

    let cache: Cache

    public init(telemetry: Telemetry) {
        cache = Cache(factory: telemetry.factory)
    }

    /// The label of a matched endpoint: Hummingbird's `{id}` captures written `:id`; none (or its not-found marker):
    /// `unmatched`.
    static func route(_ endpoint: String?) -> String {
        guard let endpoint, endpoint != "NotFound", endpoint.hasPrefix("/") else { return "unmatched" }
        return endpoint.split(separator: "/", omittingEmptySubsequences: false)
            .map { $0.hasPrefix("{") && $0.hasSuffix("}") ? ":" + $0.dropFirst().dropLast() : String($0) }
            .joined(separator: "/")
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        let method =
            switch request.method {
            case .get, .head, .post, .put, .patch, .delete, .options: request.method.rawValue
            default: "OTHER"
            }
        do {
            let response = try await next(request, context)
            record(context.endpointPath, method: method, status: response.status.code, since: start)
            return response
        } catch {
            let status = (error as? any HTTPResponseError)?.status.code ?? 500
            record(context.endpointPath, method: method, status: status, since: start)
            throw error
        }
    }

    private func record(_ endpoint: String?, method: String, status: Int, since start: ContinuousClock.Instant) {
        let handles = cache.handles(Cache.Key(endpoint: endpoint, method: method, status: status))
        handles.requests.increment()
        let (seconds, attoseconds) = (ContinuousClock.now - start).components
        handles.duration.recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
