import Foundation
import HTTPTypes
import Hummingbird
import JSON
import Synchronization
import TestSupport

/// A local stand-in for Supabase/PostgREST serving seed 002's `logins` table, column for column: `id uuid` (primary
/// key, default `gen_random_uuid()`), `provider text not null`, `provider_uid text not null`, `email text`,
/// `display_name text`, `client_timestamp timestamptz`, `created_at timestamptz` (default `now()`). It answers as
/// PostgREST does: 201 on insert (no body with `Prefer: return=minimal`); 400 `PGRST204` for a member that is no
/// column; 400 `22P02` / `22007` for a value the column's type refuses; 400 `23502` for a null in a NOT NULL
/// column; 409 `23505` for a duplicate `id`; 400 `PGRST102` for a body that is not JSON; 401 `PGRST301` for a wrong
/// key; 404 `PGRST205` for any other path (`logins/signout` too: seed 002's Supabase option has no such table).
/// With `signOutPath`, it is instead a custom API that also takes seed 002 §4's sign-out body (exactly its three
/// members) at `logins/signout`. Scripted answers (a 503, a 429 with `Retry-After`) go out first, one per request.
/// Every request is recorded.
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
        /// Serve the request first (insert the row), then answer this: an answer lost on the way back.
        var insertFirst = false
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
    /// The primary keys of the table's rows, in insertion order.
    func ids(_ table: String = "logins") -> [String] {
        rows(table).compactMap { if case .string(let id)? = $0["id"] { id } else { nil } }
    }

    /// Seed 002's `logins` columns: name → (type, NOT NULL without a default).
    static let columns: [String: (type: String, required: Bool)] = [
        "id": ("uuid", false), "provider": ("text", true), "provider_uid": ("text", true), "email": ("text", false),
        "display_name": ("text", false), "client_timestamp": ("timestamptz", false), "created_at": ("timestamptz", false),
    ]
    /// Seed 002 §4's sign-out body, for the custom-API variant.
    static let signOutMembers: Set<String> = ["provider", "provider_uid", "client_timestamp"]

    static func start(apiKey: String, signOutPath: Bool = false) async throws -> PostgRESTServer {
        let state = PostgRESTState()
        let router = Router()
        router.post("logins") { request, _ in try await handle(request, table: "logins", apiKey: apiKey, state: state) }
        if signOutPath {
            router.post("logins/signout") { request, _ in
                try await handle(request, table: "logins/signout", apiKey: apiKey, state: state)
            }
        }
        // Any other path: PostgREST knows no such table. (The router does not fall back from `logins/…` to `**`.)
        let unknownTable: @Sendable (Request, BasicRequestContext) async throws -> Response = { request, _ in
            _ = try await request.body.collect(upTo: 1 << 20)
            state.storage.withLock { $0.requests.append(Recorded(path: request.uri.path, headers: [:], body: "")) }
            let table = request.uri.path.split(separator: "/").joined(separator: "/")
            return problem(
                404, "PGRST205", "Could not find the table 'public.\(table)' in the schema cache", details: nil,
                hint: "Perhaps you meant the table 'public.logins'")
        }
        if !signOutPath { router.post("logins/**", use: unknownTable) }
        router.post("**", use: unknownTable)
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
        if let scripted, scripted.insertFirst {
            _ = try await insert(text, table: table, headers: headers, apiKey: apiKey, state: state)
        }
        if let scripted {
            var fields = HTTPFields()
            for (name, value) in scripted.headers { fields[HTTPField.Name(name)!] = value }
            return Response(
                status: .init(code: scripted.status), headers: fields, body: .init(byteBuffer: ByteBuffer(string: scripted.body)))
        }
        return try await insert(text, table: table, headers: headers, apiKey: apiKey, state: state)
    }

    private static func insert(
        _ text: String, table: String, headers: [String: String], apiKey: String, state: PostgRESTState
    ) async throws -> Response {
        guard headers["apikey"] == apiKey, headers["authorization"] == "Bearer \(apiKey)" else {
            return problem(401, "PGRST301", "JWSError JWSInvalidSignature", details: nil)
        }
        guard let row = try? JSONValue(parsing: text), case .object(let members) = row else {
            return problem(400, "PGRST102", "Empty or invalid json", details: nil)
        }
        if table == "logins/signout" {
            // The custom API's sign-out: exactly seed 002 §4's members, stored as they come.
            if let unknown = members.keys.sorted().first(where: { !signOutMembers.contains($0) }) {
                return problem(
                    400, "PGRST204", "Could not find the '\(unknown)' column of 'logins/signout' in the schema cache", details: nil)
            }
            state.storage.withLock { $0.rows[table, default: []].append(members) }
            return Response(status: .created)
        }
        if let refusal = refusal(of: members) { return refusal }
        var stored = members
        if stored["id"] == nil || stored["id"] == .null { stored["id"] = .string(UUID().uuidString.lowercased()) }
        stored["created_at"] = .string(ISO8601DateFormatter().string(from: Date()))
        let id = stored["id"]!
        let inserted = state.storage.withLock { state -> Bool in
            if state.rows[table, default: []].contains(where: { $0["id"] == id }) { return false }
            state.rows[table, default: []].append(stored)
            return true
        }
        guard inserted else {
            return problem(
                409, "23505", "duplicate key value violates unique constraint \"logins_pkey\"",
                details: "Key (id)=(\(id.jsonString.trimmingCharacters(in: ["\""]))) already exists.")
        }
        if headers["prefer"]?.contains("return=minimal") == true { return Response(status: .created) }
        return Response(
            status: .created, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(string: JSONValue.array([.object(stored)]).jsonString)))
    }

    /// What Postgres (through PostgREST) says of a row for seed 002's table, or nil when it takes it.
    private static func refusal(of members: [String: JSONValue]) -> Response? {
        for name in members.keys.sorted() where columns[name] == nil {
            return problem(400, "PGRST204", "Could not find the '\(name)' column of 'logins' in the schema cache", details: nil)
        }
        for (name, column) in columns.sorted(by: { $0.key < $1.key }) {
            let value = members[name] ?? .null
            if value == .null {
                if column.required {
                    return problem(
                        400, "23502", "null value in column \"\(name)\" of relation \"logins\" violates not-null constraint",
                        details: "Failing row contains (…).")
                }
                continue
            }
            // PostgREST hands JSON to Postgres, which casts each value to its column's type.
            let text: String
            switch value {
            case .string(let string): text = string
            default: text = value.jsonString
            }
            switch column.type {
            case "uuid" where UUID(uuidString: text) == nil:
                return problem(400, "22P02", "invalid input syntax for type uuid: \"\(text)\"", details: nil)
            case "timestamptz" where RFC3339.parse(text) == nil:
                return problem(400, "22007", "invalid input syntax for type timestamp with time zone: \"\(text)\"", details: nil)
            default: break
            }
        }
        return nil
    }

    private static func problem(_ status: Int, _ code: String, _ message: String, details: String?, hint: String? = nil) -> Response {
        let body: JSONValue = [
            "code": .string(code), "details": details.map(JSONValue.string) ?? .null, "hint": hint.map(JSONValue.string) ?? .null,
            "message": .string(message),
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
