import Foundation
import HTTPTypes
import NIOCore
import NIOPosix
import Testing

/// What every route shares: strict JSON bodies, the 1 MiB body limit, the error envelope, authentication, and the
/// public `health` and `config`.
/// Serialized: every `TestAPI.run` opens Postgres connections of its own, and all cases at once exceed the
/// server's `max_connections` (100).
@Suite struct RequestValidationTests {
    static let oneMiB = 1 << 20

    // MARK: Bodies

    @Test(arguments: [
        ("{\"email\": ", "malformed JSON"), ("[{\"email\":\"a@example.com\",\"password\":\"secret123\"}]", "a JSON array"),
        ("\"just a string\"", "a JSON string"), ("", "an empty body"), ("null", "null"),
    ])
    func bodyMustBeAJSONObject(body: String, what: String) async throws {
        try await TestAPI.run { api, client in
            let result = try await client.call(.post, "auth/login", body: body, headers: [.contentType: "application/json"])
            #expect(result.status == 400, "\(what)")
            #expect(result.errorCode == "VALIDATION_ERROR", "\(what)")
            expectErrorEnvelope(result)
        }
    }

    @Test(arguments: [
        (#"{"email": 5, "password": "secret123"}"#, "email"), (#"{"email": "a@example.com", "password": ["x"]}"#, "password"),
        (#"{"email": "a@example.com"}"#, "password"), (#"{"email": null, "password": "secret123"}"#, "email"),
    ])
    func fieldErrorsNameTheField(body: String, field: String) async throws {
        try await TestAPI.run { api, client in
            let result = try await client.call(.post, "auth/login", body: body, headers: [.contentType: "application/json"])
            #expect(result.status == 400)
            #expect(result.errorCode == "VALIDATION_ERROR")
            #expect(result.json["error"]["details"]["field"].string == field)
            #expect(result.json["error"]["message"].string?.contains(field) == true)
        }
    }

    /// A path the API has, asked with a method it does not have: 405 with `Allow` (RFC 9110), not 404; a path it does
    /// not have stays 404.
    @Test func aMethodAPathDoesNotHaveIs405WithAllow() async throws {
        try await TestAPI.run { api, client in
            let meals = try await client.call(.delete, "meals")
            #expect(meals.status == 405 && meals.errorCode == "METHOD_NOT_ALLOWED", "\(meals.text)")
            #expect(meals.headers[.allow] == "GET")
            let user = try await client.call(.put, "users/me")
            #expect(user.status == 405 && user.headers[.allow] == "DELETE, GET, POST", "\(user.text)")
            let job = try await client.call(.post, "jobs/3f2504e0-4f89-11d3-9a0c-0305e82c3301")
            #expect(job.status == 405 && job.headers[.allow] == "DELETE, GET", "\(job.text)")
            let unknown = try await client.call(.get, "no-such-route")
            #expect(unknown.status == 404 && unknown.errorCode == "NOT_FOUND")
        }
    }

    @Test func malformedJSONOnAnAuthenticatedRoute() async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            let result = try await client.call(
                .post, "meals/sync", token: account.accessToken, body: #"{"localMeals": [{"localId": "a",}"#,
                headers: [.contentType: "application/json"])
            #expect(result.status == 400)
            #expect(result.errorCode == "VALIDATION_ERROR")
        }
    }

    /// Over 1 MiB with a truthful Content-Length: 413 whatever the route.
    @Test(arguments: ["auth/login", "auth/register", "meals/sync"])
    func bodyOverOneMiBIsRefused(path: String) async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            let body = #"{"email":""# + String(repeating: "a", count: Self.oneMiB) + #"@example.com","password":"x"}"#
            let result = try await client.call(
                .post, path, token: account.accessToken, body: body, headers: [.contentType: "application/json"])
            #expect(result.status == 413)
            #expect(result.errorCode == "PAYLOAD_TOO_LARGE")
            #expect(result.json["error"]["details"]["limit"].int == Self.oneMiB)
            expectErrorEnvelope(result)
        }
    }

    /// The limit is exactly 1 MiB: a body of 1 MiB is read, one byte more is refused.
    @Test func limitIsExactlyOneMiB() async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            let json = #"{"localMeals":[]}"#
            let exact = json + String(repeating: " ", count: Self.oneMiB - json.utf8.count)
            #expect(exact.utf8.count == Self.oneMiB)
            let accepted = try await client.call(
                .post, "meals/sync", token: account.accessToken, body: exact, headers: [.contentType: "application/json"])
            #expect(accepted.status == 200)
            #expect(accepted.data["syncedLocalMeals"].array.isEmpty)

            let refused = try await client.call(
                .post, "meals/sync", token: account.accessToken, body: exact + " ", headers: [.contentType: "application/json"])
            #expect(refused.status == 413)
            #expect(refused.errorCode == "PAYLOAD_TOO_LARGE")
        }
    }

    /// No Content-Length (chunked): the server counts what it reads and refuses past 1 MiB.
    @Test func chunkedBodyOverOneMiBIsRefused() async throws {
        try await TestAPI.run(live: true) { api, client in
            let port = try #require(client.port)
            let head =
                "POST /api/mobile/v1/auth/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                + "Transfer-Encoding: chunked\r\n\r\n"
            var chunks: [ByteBuffer] = []
            let piece = String(repeating: "a", count: 64 * 1024)
            for _ in 0..<17 {  // 1 MiB + 64 KiB
                chunks.append(ByteBuffer(string: String(piece.utf8.count, radix: 16) + "\r\n" + piece + "\r\n"))
            }
            chunks.append(ByteBuffer(string: "0\r\n\r\n"))
            let response = try await RawHTTP.exchange(port: port, head: head, body: chunks)
            #expect(response.status == 413)
            let json = JSON(parsing: response.body)
            #expect(json["error"]["code"].string == "PAYLOAD_TOO_LARGE")
            #expect(json["success"].bool == false)
        }
    }

    /// A Content-Length over the limit is refused before the body is read: the answer comes while the client
    /// has sent only a few bytes of the 2 MiB it announced.
    @Test func announcedOversizedBodyIsRefusedBeforeItIsRead() async throws {
        try await TestAPI.run(live: true) { api, client in
            let port = try #require(client.port)
            let head =
                "POST /api/mobile/v1/auth/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                + "Content-Length: \(2 * Self.oneMiB)\r\n\r\n"
            let response = try await RawHTTP.exchange(port: port, head: head, body: [ByteBuffer(string: #"{"email":"#)])
            #expect(response.status == 413)
            #expect(JSON(parsing: response.body)["error"]["code"].string == "PAYLOAD_TOO_LARGE")
        }
    }

    // MARK: Routes and the envelope

    @Test(arguments: ["nope", "meals/unknown/deeper", "jobs"])
    func unknownRouteIsNotFoundInTheEnvelope(path: String) async throws {
        try await TestAPI.run { api, client in
            let result = try await client.call(.get, path)
            #expect(result.status == 404)
            #expect(result.errorCode == "NOT_FOUND")
            expectErrorEnvelope(result)
        }
    }

    /// One of each kind of refusal, all in the seed's error envelope.
    @Test func everyErrorUsesTheEnvelope() async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            let token = account.accessToken
            let json: HTTPFields = [.contentType: "application/json"]
            let refusals: [(CallResult, Int, String)] = [
                (try await client.call(.post, "auth/login", body: "{", headers: json), 400, "VALIDATION_ERROR"),
                (try await client.call(.get, "meals?limit=0", token: token), 400, "VALIDATION_ERROR"),
                (try await client.call(.get, "meals"), 401, "UNAUTHORIZED"),
                (try await client.call(.get, "insights", token: "garbage"), 401, "UNAUTHORIZED"),
                (try await client.call(.get, "jobs/\(UUID().uuidString)", token: token), 404, "NOT_FOUND"),
                (try await client.call(.get, "no/such/route"), 404, "NOT_FOUND"),
                (
                    try await client.call(.post, "auth/login", json: ["email": account.email, "password": "wrong password"]), 401,
                    "INVALID_CREDENTIALS"
                ),
                (
                    try await client.call(.post, "auth/login", body: String(repeating: " ", count: Self.oneMiB + 1), headers: json), 413,
                    "PAYLOAD_TOO_LARGE"
                ),
            ]
            for (result, status, code) in refusals {
                #expect(result.status == status, "\(code)")
                #expect(result.errorCode == code, "\(status)")
                expectErrorEnvelope(result)
            }
        }
    }

    // MARK: Public routes

    @Test func healthChecksRedisAndPostgres() async throws {
        try await TestAPI.run { api, client in
            let result = try await client.call(.get, "health")
            #expect(result.status == 200)
            #expect(result.json["success"].bool == true)
            #expect(result.data["status"].string == "healthy")
            #expect(result.data["apiVersion"].string == "v1")
            #expect(result.data["checks"]["redis"].string == "ok")
            #expect(result.data["checks"]["postgres"].string == "ok")
            let serverTime = try #require(result.data["serverTime"].string.flatMap(parseISO))
            #expect(abs(serverTime.timeIntervalSinceNow) < 60)
            #expect(result.json["meta"]["version"].string == "v1")
        }
    }

    @Test func configIsTheSeedsConfiguration() async throws {
        try await TestAPI.run { api, client in
            let result = try await client.call(.get, "config")
            #expect(result.status == 200)
            let data = result.data
            #expect(data.keys == ["features", "limits", "endpoints"])
            #expect(data["features"].keys == ["aiChat", "mealScanning", "insights", "offlineMode"])
            for feature in ["aiChat", "mealScanning", "insights", "offlineMode"] {
                #expect(data["features"][feature].bool == true, "\(feature)")
            }
            #expect(data["limits"]["maxImageSize"].int == 10_485_760)
            #expect(data["limits"]["maxChatMessageLength"].int == 1000)
            #expect(data["endpoints"]["analyze"].string == "/api/mobile/v1/analyze")
            #expect(data["endpoints"]["chat"].string == "/api/mobile/v1/chat")
            #expect(data["endpoints"]["meals"].string == "/api/mobile/v1/meals")
            #expect(data["endpoints"]["sync"].string == "/api/mobile/v1/meals/sync")
            #expect(result.json["meta"]["version"].string == "v1")
        }
    }

    // MARK: Authentication

    /// Every GET route except the public ones needs a valid access token.
    @Test func everyAuthenticatedGetRouteRefusesMissingOrBadTokens() async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            let base = "/api/mobile/v1/"
            let publicPaths: Set<String> = ["health", "config", "openapi.json"]
            let paths = api.routes.filter { $0.method == "GET" }.map { String($0.path.dropFirst(base.count)) }
                .filter { !publicPaths.contains($0) }
            let expected: Set<String> = [
                "auth/me", "users/me", "meals", "insights", "user/stats", "subscriptions/status", "chat/history", "jobs/{id}",
            ]
            #expect(expected.isSubset(of: Set(paths)))

            let parts = account.accessToken.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            try #require(parts.count == 3)
            let tampered = [parts[0], parts[1], String(parts[2].reversed())].joined(separator: ".")
            let badCredentials: [(String, HTTPFields)] = [
                ("no token", [:]),
                ("garbage", [.authorization: "Bearer garbage"]),
                ("empty bearer", [.authorization: "Bearer "]),
                ("tampered signature", [.authorization: "Bearer \(tampered)"]),
                ("refresh token as access token", [.authorization: "Bearer \(account.refreshToken)"]),
                ("not a bearer", [.authorization: "Basic \(Data("a:b".utf8).base64EncodedString())"]),
                ("token without scheme", [.authorization: account.accessToken]),
            ]
            for path in paths {
                let uri = path.replacingOccurrences(of: "{id}", with: UUID().uuidString.lowercased())
                for (what, headers) in badCredentials {
                    let result = try await client.call(.get, uri, headers: headers)
                    #expect(result.status == 401, "GET \(uri) with \(what)")
                    #expect(result.errorCode == "UNAUTHORIZED", "GET \(uri) with \(what)")
                }
                // The same route with the real token is not refused for authentication.
                let accepted = try await client.call(.get, uri, token: account.accessToken)
                #expect(accepted.status != 401, "GET \(uri) with a valid token")
            }

            let sync = try await client.call(.post, "meals/sync", json: ["localMeals": [Any]()])
            #expect(sync.status == 401)
            #expect(sync.errorCode == "UNAUTHORIZED")
        }
    }
}

// MARK: Helpers

private func parseISO(_ text: String) -> Date? {
    try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text)
}

/// The seed's error envelope: `{success: false, error: {code, message, details?}, meta: {timestamp, version: "v1"}}`.
private func expectErrorEnvelope(_ result: CallResult, sourceLocation: SourceLocation = #_sourceLocation) {
    let json = result.json
    #expect(json["success"].bool == false, sourceLocation: sourceLocation)
    #expect(json["error"]["code"].string?.isEmpty == false, sourceLocation: sourceLocation)
    #expect(json["error"]["message"].string?.isEmpty == false, sourceLocation: sourceLocation)
    #expect(!json["data"].exists, sourceLocation: sourceLocation)
    #expect(json["meta"]["version"].string == "v1", sourceLocation: sourceLocation)
    let timestamp = json["meta"]["timestamp"].string.flatMap(parseISO)
    #expect(timestamp != nil, sourceLocation: sourceLocation)
    if let timestamp { #expect(abs(timestamp.timeIntervalSinceNow) < 60, sourceLocation: sourceLocation) }
    #expect(result.headers[.contentType]?.hasPrefix("application/json") == true, sourceLocation: sourceLocation)
}

/// One HTTP/1.1 exchange over a plain TCP connection, for what the test clients cannot send (a chunked body, a
/// Content-Length the body does not match).
private enum RawHTTP {
    struct Response {
        var status: Int
        var body: String
    }

    struct Timeout: Error {}

    static func exchange(port: Int, head: String, body: [ByteBuffer], timeout: Duration = .seconds(20)) async throws -> Response {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        return try await channel.executeThenClose { inbound, outbound in
            try await withThrowingTaskGroup(of: Response?.self) { group in
                group.addTask {
                    // The server may answer and close before taking the whole body: write errors are expected.
                    do {
                        try await outbound.write(ByteBuffer(string: head))
                        for chunk in body { try await outbound.write(chunk) }
                    } catch {}
                    try await Task.sleep(for: timeout)
                    throw Timeout()
                }
                group.addTask {
                    var received = ByteBuffer()
                    do {
                        for try await var buffer in inbound {
                            received.writeBuffer(&buffer)
                            if let response = parse(received, final: false) { return response }
                        }
                    } catch {
                        // A reset after the answer arrived still leaves the answer readable.
                    }
                    return parse(received, final: true)
                }
                defer { group.cancelAll() }
                while let next = try await group.next() {
                    if let response = next { return response }
                    throw Timeout()
                }
                throw Timeout()
            }
        }
    }

    /// A complete response (by Content-Length, or everything up to EOF when `final`), else nil.
    static func parse(_ buffer: ByteBuffer, final: Bool) -> Response? {
        let text = String(buffer: buffer)
        guard let split = text.range(of: "\r\n\r\n") else { return nil }
        let headLines = text[..<split.lowerBound].split(separator: "\r\n")
        guard let statusLine = headLines.first, let status = statusLine.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
        else { return nil }
        let body = String(text[split.upperBound...])
        let length = headLines.dropFirst().first { $0.lowercased().hasPrefix("content-length:") }
            .flatMap { Int($0.split(separator: ":", maxSplits: 1)[1].trimmingCharacters(in: .whitespaces)) }
        if let length {
            guard body.utf8.count >= length else { return final ? Response(status: status, body: body) : nil }
            return Response(status: status, body: String(decoding: body.utf8.prefix(length), as: UTF8.self))
        }
        return final ? Response(status: status, body: body) : nil
    }
}
