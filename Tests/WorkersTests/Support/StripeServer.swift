import Foundation
import HTTPTypes
import Hummingbird
import JSON
import Synchronization
import TestSupport

/// A local stand-in for Stripe's subscriptions API: `GET /v1/subscriptions/{id}` from an in-memory map, answering
/// as Stripe does — the subscription object on 200; 401 with an `invalid_request_error` for a missing or wrong
/// secret key; 404 `resource_missing` for an unknown id. Scripted answers (a 500, a 429 with `Retry-After`) go out
/// first, one per request. Every request's subscription id is recorded.
final class StripeServer: Sendable {
    struct Scripted: Sendable {
        var status: Int
        var headers: [String: String] = [:]
        var body: String = #"{"error": {"type": "api_error", "message": "Something went wrong on Stripe's end."}}"#
    }

    struct State: Sendable {
        var subscriptions: [String: JSONValue] = [:]
        var script: [Scripted] = []
        var requested: [String] = []
    }

    let port: Int
    let secretKey: String
    private let server: LocalServer
    private let state: StripeState

    var url: String { "http://127.0.0.1:\(port)" }

    private init(port: Int, secretKey: String, server: LocalServer, state: StripeState) {
        self.port = port
        self.secretKey = secretKey
        self.server = server
        self.state = state
    }

    func stop() { server.stop() }

    func put(_ subscription: JSONValue) {
        guard case .string(let id)? = subscription["id"] else { return }
        state.storage.withLock { $0.subscriptions[id] = subscription }
    }

    /// Answers the next requests with these, in order, before serving the map again.
    func script(_ answers: Scripted...) { state.storage.withLock { $0.script += answers } }
    /// The subscription ids asked for, in order.
    var requested: [String] { state.storage.withLock { $0.requested } }

    /// A subscription object in Stripe's shape (API versions before 2025-03-31 keep the period on the subscription).
    static func subscription(
        id: String, customer: String = "cus_test", status: String, price: String, periodEnd: Int, userID: String? = nil
    ) -> JSONValue {
        [
            "id": .string(id), "object": "subscription", "customer": .string(customer), "status": .string(status),
            "current_period_end": .int(periodEnd), "cancel_at_period_end": false, "created": .int(periodEnd - 30 * 86_400),
            "items": [
                "object": "list",
                "data": [["id": "si_1", "object": "subscription_item", "price": ["id": .string(price), "object": "price"]]],
            ],
            "metadata": userID.map { ["userId": .string($0)] } ?? [:],
        ]
    }

    static func start(secretKey: String) async throws -> StripeServer {
        let state = StripeState()
        let router = Router()
        router.get("v1/subscriptions/:id") { request, context in
            let id = context.parameters.get("id") ?? ""
            let scripted = state.storage.withLock { state -> Scripted? in
                state.requested.append(id)
                return state.script.isEmpty ? nil : state.script.removeFirst()
            }
            if let scripted {
                var fields: HTTPFields = [.contentType: "application/json"]
                for (name, value) in scripted.headers { fields[HTTPField.Name(name)!] = value }
                return Response(
                    status: .init(code: scripted.status), headers: fields, body: .init(byteBuffer: ByteBuffer(string: scripted.body)))
            }
            guard request.headers[.authorization] == "Bearer \(secretKey)" else {
                return error(401, type: "invalid_request_error", code: nil, message: "Invalid API Key provided: sk_test_****")
            }
            guard let subscription = state.storage.withLock({ $0.subscriptions[id] }) else {
                return error(404, type: "invalid_request_error", code: "resource_missing", message: "No such subscription: '\(id)'")
            }
            return json(200, subscription)
        }
        let server = try await LocalServer.start(router, name: "stripe")
        return StripeServer(port: server.port, secretKey: secretKey, server: server, state: state)
    }

    private static func error(_ status: Int, type: String, code: String?, message: String) -> Response {
        var error: [String: JSONValue] = ["type": .string(type), "message": .string(message)]
        if let code { error["code"] = .string(code) }
        return json(status, ["error": .object(error)])
    }

    private static func json(_ status: Int, _ value: JSONValue) -> Response {
        Response(
            status: .init(code: status), headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(string: value.jsonString)))
    }
}

/// The server's state, shared between its request handlers and the test.
final class StripeState: Sendable {
    let storage = Mutex(StripeServer.State())
}
