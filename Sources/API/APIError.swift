import Foundation
import HTTPTypes
import Hummingbird
import JSON
import Postgres
import Redis

/// A refusal in the seed's envelope: `{success: false, error: {code, message, details}, meta}`.
package struct APIError: Error, Sendable, CustomStringConvertible {
    package var status: HTTPResponse.Status
    package var code: String
    package var message: String
    package var details: [String: JSONValue]?
    package var headers: HTTPFields

    package init(
        _ status: HTTPResponse.Status, _ code: String, _ message: String, details: [String: JSONValue]? = nil, headers: HTTPFields = [:]
    ) {
        self.status = status
        self.code = code
        self.message = message
        self.details = details
        self.headers = headers
    }

    package var description: String { "\(status.code) \(code): \(message)" }

    package static func validation(_ field: String, _ message: String) -> APIError {
        APIError(.badRequest, "VALIDATION_ERROR", message, details: ["field": .string(field)])
    }

    package static let unauthorized = APIError(.unauthorized, "UNAUTHORIZED", "Missing or invalid authentication")

    package static func notFound(_ what: String) -> APIError { APIError(.notFound, "NOT_FOUND", "\(what) not found") }

    /// Redis or Postgres could not be reached: the client may retry, and nothing internal is named.
    package static let unavailable = APIError(
        .serviceUnavailable, "SERVICE_UNAVAILABLE", "A backing service is temporarily unavailable; try again",
        headers: [.retryAfter: "2"])

    /// True for a failure that says a backing service is down, not that the request or the server is wrong.
    static func isOutage(_ error: any Error) -> Bool {
        (error as? RedisError)?.isOutage == true || (error as? PostgresError)?.isOutage == true
    }
}

/// Turns every error a handler throws into the envelope: client errors keep their status and code; Redis or
/// Postgres unreachable is a 503 `SERVICE_UNAVAILABLE` with `Retry-After`; anything else is a 500 `SERVER_ERROR`
/// whose cause is logged (never sent).
struct ErrorEnvelopeMiddleware<Context: RequestContext>: RouterMiddleware {
    /// The router's paths and their methods: a known path asked with another method is 405, not 404.
    var allowed = AllowedMethods()

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as APIError {
            return Envelope.failure(error)
        } catch let error as any HTTPResponseError {
            // Hummingbird's own refusals: body over the limit, unknown route, bad method.
            switch error.status {
            case .contentTooLarge:
                return Envelope.failure(APIError(.contentTooLarge, "PAYLOAD_TOO_LARGE", "request body is too large"))
            case .notFound:
                let methods = allowed.methods(for: request.uri.path)
                guard methods.isEmpty else {
                    return Envelope.failure(
                        APIError(
                            .methodNotAllowed, "METHOD_NOT_ALLOWED",
                            "\(request.method) is not allowed here (allowed: \(methods.joined(separator: ", ")))",
                            headers: [.allow: methods.joined(separator: ", ")]))
                }
                return Envelope.failure(APIError.notFound("route \(request.method) \(request.uri.path)"))
            case .methodNotAllowed:
                return Envelope.failure(APIError(.methodNotAllowed, "METHOD_NOT_ALLOWED", "\(request.method) is not allowed here"))
            case let status where (400..<500).contains(status.code):
                return Envelope.failure(APIError(status, "BAD_REQUEST", (error as? HTTPError)?.body ?? status.reasonPhrase))
            default:
                context.logger.error("request failed", metadata: ["error": "\(error)", "path": "\(request.uri.path)"])
                return Envelope.failure(APIError(.internalServerError, "SERVER_ERROR", "Internal server error"))
            }
        } catch  where APIError.isOutage(error) {
            context.logger.warning(
                "request refused: a backing service is unavailable", metadata: ["error": "\(error)", "path": "\(request.uri.path)"])
            return Envelope.failure(APIError.unavailable)
        } catch {
            context.logger.error("request failed", metadata: ["error": "\(String(reflecting: error))", "path": "\(request.uri.path)"])
            return Envelope.failure(APIError(.internalServerError, "SERVER_ERROR", "Internal server error"))
        }
    }
}
