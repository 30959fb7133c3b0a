import Foundation
import HTTPTypes
import Hummingbird
import TestSupport
import Queue
import Synchronization

/// A local stand-in for a Supabase/PostgREST `logins` table (seed 002), answering the way PostgREST does: 201 on
/// insert (no body with `Prefer: return=minimal`), 409 `23505` for a duplicate `event_id`, 400 `PGRST102` for a
/// body that is not JSON, 400 `23502` for a null `provider_uid`, 401 `PGRST301` for a wrong key. Scripted
/// answers (a 503, a 429 with `Retry-After`) go out first, one per request. Every request is recorded.
final class PostgRESTServer: Sendable {
    struct Recorded: Sendable {
        var path: String
        /// Header names lowercased.
        var headers: [String: String]
        var body: String
    }

    struct Scripted: Sendable {
        var status: Int
        var headers: [String: String] = [:]
        var body: String = ""
    }

    struct State: Sendable {
        /// Rows by table (`logins`, `logins/signout`).
        var rows: [String: [[String: JSONValue]]] = [:]
        var requests: [Recorded] = []
        var script: [Scripted] = []
    }

    let port: Int
    let apiKey: String
    private let server: LocalServer
    private let state: PostgRESTState

    var url: String { "http://127.0.0.1:\(port)" }

    private init(port: Int, apiKey: String, server: LocalServer, state: PostgRESTState) {
        self.port = port
        self.apiKey = apiKey
        self.server = server
        self.state = state
    }

    func stop() { server.stop() }

    /// Answers the next requests with these, in order, before serving the table again.
    func enqueue(_ answers: Scripted...) { state.storage.withLock { $0.script += answers } }
    var requests: [Recorded] { state.storage.withLock { $0.requests } }
    func rows(_ table: String = "logins") -> [[String: JSONValue]] { state.storage.withLock { $0.rows[table, default: []] } }
    /// The `event_id`s stored in the table (`logins` or `logins/signout`).
    func eventIDs(_ table: String = "logins") -> [String] {
        rows(table).compactMap { if case .string(let id)? = $0["event_id"] { id } else { nil } }
    }

    static func start(apiKey: String) async throws -> PostgRESTServer {
        let state = PostgRESTState()
        let router = Router()
        router.post("logins") { request, _ in try await handle(request, table: "logins", apiKey: apiKey, state: state) }
        router.post("logins/signout") { request, _ in
            try await handle(request, table: "logins/signout", apiKey: apiKey, state: state)
        }
        let server = try await LocalServer.start(router, name: "postgrest")
        return PostgRESTServer(port: server.port, apiKey: apiKey, server: server, state: state)
    }

    private static func handle(_ request: Request, table: String, apiKey: String, state: PostgRESTState) async throws -> Response {
        let buffer = try await request.body.collect(upTo: 1 << 20)
        let text = String(buffer: buffer)
        var headers: [String: String] = [:]
        for field in request.headers { headers[field.name.canonicalName] = field.value }
        let scripted = state.storage.withLock { state -> Scripted? in
            state.requests.append(Recorded(path: request.uri.path, headers: headers, body: text))
            return state.script.isEmpty ? nil : state.script.removeFirst()
        }
        if let scripted {
            var fields = HTTPFields()
            for (name, value) in scripted.headers { fields[HTTPField.Name(name)!] = value }
            return Response(
                status: .init(code: scripted.status), headers: fields, body: .init(byteBuffer: ByteBuffer(string: scripted.body)))
        }
        guard headers["apikey"] == apiKey, headers["authorization"] == "Bearer \(apiKey)" else {
            return problem(401, "PGRST301", "JWSError JWSInvalidSignature", details: nil)
        }
        guard let row = try? JSONValue(parsing: text), case .object(let members) = row else {
            return problem(400, "PGRST102", "Empty or invalid json", details: nil)
        }
        guard let uid = members["provider_uid"], uid != .null else {
            return problem(
                400, "23502", "null value in column \"provider_uid\" of relation \"logins\" violates not-null constraint",
                details: "Failing row contains (…)")
        }
        let eventID = members["event_id"]
        let inserted = state.storage.withLock { state -> Bool in
            if let eventID, state.rows[table, default: []].contains(where: { $0["event_id"] == eventID }) { return false }
            state.rows[table, default: []].append(members)
            return true
        }
        guard inserted else {
            return problem(
                409, "23505", "duplicate key value violates unique constraint \"logins_event_id_key\"",
                details: "Key (event_id)=(\(eventID?.jsonString ?? "")) already exists.")
        }
        if headers["prefer"]?.contains("return=minimal") == true { return Response(status: .created) }
        return Response(
            status: .created, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(string: JSONValue.array([row]).jsonString)))
    }

    private static func problem(_ status: Int, _ code: String, _ message: String, details: String?) -> Response {
        let body: JSONValue = [
            "code": .string(code), "details": details.map(JSONValue.string) ?? .null, "hint": .null, "message": .string(message),
        ]
        return Response(
            status: .init(code: status), headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(string: body.jsonString)))
    }
}

/// The server's state, shared between its request handlers and the test.
final class PostgRESTState: Sendable {
    let storage = Mutex(PostgRESTServer.State())
}
