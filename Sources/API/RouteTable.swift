import HTTPTypes
import Hummingbird

/// Registers the API's routes under `/api/mobile/v1` and remembers them, so a test can hold them against the
/// OpenAPI document. With read replicas, a request that may write (any method but GET) marks its caller's write once
/// its handler is done, so their next reads see it (``ReadRouting``).
final class RouteTable {
    typealias Handler = @Sendable (Request, APIContext) async throws -> Response

    static let basePath = "/api/mobile/v1"
    private let group: RouterGroup<APIContext>
    /// Every registered route as (method, path with `{param}`), e.g. ("GET", "/api/mobile/v1/jobs/{id}").
    private(set) var routes: [(method: String, path: String)] = []
    private let reads: ReadRouting?

    /// - Parameter reads: where reads go; nil or without replicas, no request is marked.
    init(router: Router<APIContext>, reads: ReadRouting? = nil) {
        group = router.group(RouterPath(Self.basePath))
        self.reads = reads?.replicas == nil ? nil : reads
    }

    func get(_ path: String, _ handler: @escaping Handler) { add(.get, path, handler) }
    func post(_ path: String, _ handler: @escaping Handler) { add(.post, path, handler) }
    func delete(_ path: String, _ handler: @escaping Handler) { add(.delete, path, handler) }

    private func add(_ method: HTTPRequest.Method, _ path: String, _ handler: @escaping Handler) {
        let handler = method == .get ? handler : reads.map { Self.markingWrites(handler, $0) } ?? handler
        group.on(RouterPath(path), method: method) { request, context in try await handler(request, context) }
        let documented = path.split(separator: "/").map { $0.hasPrefix(":") ? "{\($0.dropFirst())}" : String($0) }.joined(separator: "/")
        routes.append((method.rawValue, Self.basePath + "/" + documented))
    }

    /// `handler`, noting whom it authenticated (``RequestWriter``) and marking their write when it is done: when it
    /// answered, or failed other than by refusing the request (a 4xx writes nothing; a 5xx or a failed job may have).
    private static func markingWrites(_ handler: @escaping Handler, _ reads: ReadRouting) -> Handler {
        { request, context in
            let writer = RequestWriter()
            do {
                let response = try await RequestWriter.$current.withValue(writer) { try await handler(request, context) }
                if let user = writer.userID { await reads.noteWrite(by: user) }
                return response
            } catch {
                let refused = (error as? APIError).map { (400..<500).contains($0.status.code) } ?? false
                if !refused, let user = writer.userID { await reads.noteWrite(by: user) }
                throw error
            }
        }
    }
}
