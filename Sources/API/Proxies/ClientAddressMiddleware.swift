import Hummingbird

/// Sets `APIContext.remoteIP` to the request's client as `TrustedProxies` sees it, before any route reads it (the
/// login and magic-link throttles, the login events).
struct ClientAddressMiddleware: RouterMiddleware {
    let proxies: TrustedProxies

    func handle(
        _ request: Request, context: APIContext, next: (Request, APIContext) async throws -> Response
    ) async throws -> Response {
        var context = context
        context.remoteIP = proxies.client(peer: context.peerIP, headers: request.headers)
        return try await next(request, context)
    }
}
