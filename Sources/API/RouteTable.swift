import HTTPTypes
import Hummingbird

/// Registers the API's routes under `/api/mobile/v1` and remembers them, so a test can hold them against the
/// OpenAPI document.
final class RouteTable {
    typealias Handler = @Sendable (Request, APIContext) async throws -> Response

    static let basePath = "/api/mobile/v1"
    private let group: RouterGroup<APIContext>
    /// Every registered route as (method, path with `{param}`), e.g. ("GET", "/api/mobile/v1/jobs/{id}").
    private(set) var routes: [(method: String, path: String)] = []

    init(router: Router<APIContext>) {
        group = router.group(RouterPath(Self.basePath))
    }

    func get(_ path: String, _ handler: @escaping Handler) { add(.get, path, handler) }
    func post(_ path: String, _ handler: @escaping Handler) { add(.post, path, handler) }
    func delete(_ path: String, _ handler: @escaping Handler) { add(.delete, path, handler) }

    private func add(_ method: HTTPRequest.Method, _ path: String, _ handler: @escaping Handler) {
        group.on(RouterPath(path), method: method) { request, context in try await handler(request, context) }
        let documented = path.split(separator: "/").map { $0.hasPrefix(":") ? "{\($0.dropFirst())}" : String($0) }.joined(separator: "/")
        routes.append((method.rawValue, Self.basePath + "/" + documented))
    }
}
