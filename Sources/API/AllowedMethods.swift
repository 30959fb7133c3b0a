import Synchronization

/// The methods each route path has, so a request for a path that exists under other methods gets 405 with `Allow`
/// (RFC 9110 §15.5.6), not 404. Filled once the routes are registered; read by `ErrorEnvelopeMiddleware`.
final class AllowedMethods: Sendable {
    /// Per route: its path segments (`nil` for a `{parameter}`) and methods.
    private let routes = Mutex<[(segments: [String?], methods: Set<String>)]>([])

    /// Takes the registered routes, as `RouteTable.routes` lists them (`/api/mobile/v1/jobs/{id}`).
    func set(_ registered: [(method: String, path: String)]) {
        var table: [[String?]: Set<String>] = [:]
        for route in registered {
            let segments = route.path.split(separator: "/").map { $0.hasPrefix("{") ? nil : String($0) }
            table[segments, default: []].insert(route.method)
        }
        routes.withLock { $0 = table.map { ($0.key, $0.value) } }
    }

    /// The methods `path` has, sorted; empty when no route has this path.
    func methods(for path: String) -> [String] {
        let parts = path.split(separator: "/").map(String.init)
        var methods = Set<String>()
        for route in routes.withLock({ $0 }) where route.segments.count == parts.count {
            if zip(route.segments, parts).allSatisfy({ $0.0 == nil || $0.0 == $0.1 }) { methods.formUnion(route.methods) }
        }
        return methods.sorted()
    }
}
