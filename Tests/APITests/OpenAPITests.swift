import Foundation
import HTTPTypes
import HummingbirdTesting
import JSON
import Queue
import Testing

/// The OpenAPI document (`openapi.json`) against the routes the API registers and the answers it really gives.
@Suite struct OpenAPITests {
    static let basePath = "/api/mobile/v1/"
    static let dummyID = "3f2c9a4e-8b1d-4c7e-9f60-2a5d7e1b4c88"

    struct Route: Hashable, Comparable, CustomStringConvertible {
        var method: String
        var path: String
        var description: String { "\(method) \(path)" }
        static func < (lhs: Route, rhs: Route) -> Bool { lhs.description < rhs.description }
    }

    static func servedDocument(_ client: any TestClientProtocol) async throws -> OpenAPIDocument {
        let served = try await client.call(.get, "openapi.json")
        try #require(served.status == 200, "GET openapi.json answered \(served.status)")
        return try OpenAPIDocument(parsing: served.text)
    }

    /// Calls a documented path (`/api/mobile/v1/...`, `{param}`s filled with a dummy UUID).
    static func call(
        _ client: any TestClientProtocol, _ operation: OpenAPIDocument.Operation, token: String? = nil, json: Any? = nil
    ) async throws -> CallResult {
        guard operation.path.hasPrefix(basePath) else { throw TestFailure("\(operation.label) is not under \(basePath)") }
        let path = operation.path.dropFirst(basePath.count).replacing(#/\{[^}/]+\}/#, with: dummyID)
        return try await client.call(HTTPRequest.Method(operation.method)!, String(path), token: token, json: json)
    }

    @Test func documentListsExactlyTheRegisteredRoutes() async throws {
        try await TestAPI.run { api, client in
            let document = try await Self.servedDocument(client)
            let registered = api.routes.map { Route(method: $0.method, path: $0.path) }
            #expect(Set(registered).count == registered.count, "a route is registered twice: \(registered.sorted())")
            let documented = document.operations.map { Route(method: $0.method, path: $0.path) }
            let undocumented = Set(registered).subtracting(documented).sorted()
            let unserved = Set(documented).subtracting(registered).sorted()
            #expect(undocumented.isEmpty, "registered but not in openapi.json: \(undocumented)")
            #expect(unserved.isEmpty, "in openapi.json but not registered: \(unserved)")
            #expect(!registered.isEmpty)
        }
    }

    /// Without a token, each documented operation reaches its handler (never the router's "route not found" or
    /// 405) and answers a status the document lists for it, with a body of the documented schema. Operations that
    /// require a token answer 401 without one; those documented without a 2xx answer 501.
    @Test func everyDocumentedOperationIsServedAsDocumented() async throws {
        try await TestAPI.run { _, client in
            let document = try await Self.servedDocument(client)
            #expect(!document.operations.isEmpty)
            for operation in document.operations {
                let body: Any? = ["POST", "PUT", "PATCH"].contains(operation.method) ? [String: Any]() : nil
                let result = try await Self.call(client, operation, json: body)
                let message = result.json["error"]["message"].string ?? ""
                #expect(
                    !(result.status == 404 && message.hasPrefix("route ")) && result.status != 405,
                    "\(operation.label) is not routed: \(result.status) \(message)")
                #expect(
                    operation.responses[String(result.status)] != nil,
                    "\(operation.label) answered undocumented \(result.status): \(result.text)")
                if let schema = document.responseSchema(operation, status: result.status) {
                    let problems = document.violations(of: try JSONValue(parsing: result.text), against: schema)
                    #expect(problems.isEmpty, "\(operation.label) \(result.status) departs from the document: \(problems)")
                }
                if !operation.isPublic {
                    #expect(
                        result.status == 401 && result.errorCode == "UNAUTHORIZED", "\(operation.label) without a token: \(result.status)")
                }
                if !operation.responses.keys.contains(where: { $0.hasPrefix("2") }) {
                    #expect(result.status == 501, "\(operation.label) has no 2xx in the document but answered \(result.status)")
                }
            }
        }
    }

    @Test func documentIsWellFormedOpenAPI() async throws {
        try await TestAPI.run { _, client in
            let document = try await Self.servedDocument(client)
            #expect(document.version?.hasPrefix("3.0.") == true, "openapi is \(String(describing: document.version))")
            #expect(document.title == "CarbScan mobile API")
            #expect(document.infoVersion == "v1")

            let references = document.references
            #expect(!references.isEmpty)
            for ref in Set(references).sorted() {
                #expect(document.resolve(ref) != nil, "$ref \(ref) does not resolve inside the document")
            }

            var operationIDs: [String: String] = [:]
            for operation in document.operations {
                let id = operation.operationID ?? ""
                #expect(!id.isEmpty, "\(operation.label) has no operationId")
                if let other = operationIDs.updateValue(operation.label, forKey: id) {
                    Issue.record("operationId \(id) is used by \(other) and \(operation.label)")
                }
                let statuses = operation.responses.keys
                // An operation that is not implemented yet answers only 501 (checked against the API above).
                #expect(
                    statuses.contains { $0.hasPrefix("2") } || statuses.contains("501"),
                    "\(operation.label) documents no 2xx answer: \(statuses.sorted())")
                let unknownSchemes = operation.securitySchemes.subtracting(document.securitySchemeNames)
                #expect(unknownSchemes.isEmpty, "\(operation.label) uses undeclared security schemes \(unknownSchemes)")

                let parameters = document.parameters(operation)
                let templated = Set(operation.path.matches(of: #/\{([^}/]+)\}/#).map { String($0.output.1) })
                let declared = Set(parameters.filter { $0.location == "path" }.map(\.name))
                #expect(
                    templated == declared, "\(operation.label): path parameters \(templated.sorted()) but declared \(declared.sorted())")
                for parameter in parameters where parameter.location == "path" {
                    #expect(parameter.required, "\(operation.label): path parameter \(parameter.name) must be required")
                }
            }
        }
    }

    /// Every enum an app reads in an answer is open (`anyOf` the known values and any string), so a value a later
    /// server adds (an error code, a tier, a job status) does not fail an app already shipped; every enum of a request
    /// stays closed, since the server refuses what it does not know.
    @Test func answerEnumsAreOpenAndRequestEnumsClosed() async throws {
        try await TestAPI.run { _, client in
            let document = try await Self.servedDocument(client)
            let answers = document.enums(inResponses: true)
            #expect(answers.contains { $0.location == "#/components/schemas/ErrorCode" && $0.open })
            #expect(answers.filter(\.open).count >= 8)
            let closed = answers.filter { !$0.open }.map(\.location)
            #expect(closed.isEmpty, "closed enums in answers: \(closed)")
            let requests = document.enums(inResponses: false)
            #expect(requests.contains { $0.location.contains("provider") })
            let open = requests.filter(\.open).map(\.location)
            #expect(open.isEmpty, "open enums in requests: \(open)")
        }
    }

    /// The Swift client is generated from the served document itself: its `openapi.json` is a link to the server's,
    /// which the generator plugin follows.
    @Test func theSwiftClientIsGeneratedFromTheServedDocument() async throws {
        let root = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let link = root.appending(path: "Clients/Swift/Sources/CarbScanClient/openapi.json")
        let target = try FileManager.default.destinationOfSymbolicLink(atPath: link.path)
        #expect(target == "../../../../Sources/API/openapi.json")
        try await TestAPI.run { _, client in
            let served = try await client.call(.get, "openapi.json")
            #expect(try Data(contentsOf: link) == Data(served.text.utf8))
        }
    }

    /// The public answers a client sees first: `data` has exactly the documented members, all of the right types.
    @Test(arguments: ["health", "config"])
    func publicAnswersHaveTheDocumentedFields(path: String) async throws {
        try await TestAPI.run { _, client in
            let document = try await Self.servedDocument(client)
            let operation = try #require(document.operations.first { $0.method == "GET" && $0.path == Self.basePath + path })
            let result = try await client.call(.get, path)
            #expect(result.status == 200, "\(result.text)")
            let envelope = try #require(document.responseSchema(operation, status: 200))
            let dataSchema = try #require(document.objectSchema(envelope).properties["data"])
            let documented = document.objectSchema(dataSchema)
            #expect(!documented.properties.isEmpty)
            #expect(result.data.keys == Set(documented.properties.keys), "GET \(path): data members differ from the document")
            #expect(documented.required.isSubset(of: result.data.keys))
            #expect(document.violations(of: try JSONValue(parsing: result.text), against: envelope) == [])
        }
    }

    /// The authenticated answers, with data in every list, against the schema of the status they come with.
    @Test func authenticatedAnswersMatchTheDocument() async throws {
        try await TestAPI.run { api, client in
            let document = try await Self.servedDocument(client)
            func check(
                _ method: String, _ path: String, query: String = "", token: String? = nil, json: Any? = nil, expect status: Int
            ) async throws -> CallResult {
                let documentedPath = Self.basePath + path.replacing(#/[0-9a-f]{8}-[0-9a-f-]{27}/#, with: "{id}")
                let operation = try #require(document.operations.first { $0.method == method && $0.path == documentedPath })
                let result = try await client.call(HTTPRequest.Method(method)!, path + query, token: token, json: json)
                #expect(result.status == status, "\(operation.label): \(result.text)")
                let schema = try #require(document.responseSchema(operation, status: result.status), "\(operation.label) \(result.status)")
                let problems = document.violations(of: try JSONValue(parsing: result.text), against: schema)
                #expect(problems.isEmpty, "\(operation.label) \(result.status) departs from the document: \(problems)")
                return result
            }
            let email = "openapi-\(UUID().uuidString.prefix(8).lowercased())@example.com"
            let registered = try await check("POST", "auth/register", json: ["email": email, "password": "long enough"], expect: 201)
            let token = try #require(registered.data["accessToken"].string)
            let userID = try #require(registered.data["user"]["id"].string)
            try await api.insertMeal(userID: userID, name: "Toast", carbs: 30, at: Date().addingTimeInterval(-3600))
            try await api.database.execute(
                "INSERT INTO chat_messages (user_id, message, response, message_type) VALUES ($1, $2, $3, $4)",
                [userID, "Carbs in rice?", "About 45 g a cup.", "carb_lookup"])
            let job = try #require(try await api.queue.enqueue("noop", payload: [:], options: EnqueueOptions(owner: userID)).id)

            let signedIn = try await check("POST", "auth/login", json: ["email": email, "password": "long enough"], expect: 200)
            let refreshToken = try #require(signedIn.data["refreshToken"].string)
            _ = try await check("POST", "auth/login", json: ["email": email, "password": "wrong password"], expect: 401)
            _ = try await check("POST", "auth/refresh", json: ["refreshToken": refreshToken], expect: 200)
            _ = try await check("POST", "auth/refresh", json: ["refreshToken": refreshToken], expect: 200)
            _ = try await check("POST", "auth/refresh", json: ["refreshToken": "rt_never-issued"], expect: 401)
            _ = try await check("GET", "auth/me", token: token, expect: 200)
            _ = try await check("GET", "users/me", token: token, expect: 200)
            _ = try await check("POST", "users/me", token: token, json: ["timeZone": "Europe/Berlin", "firstName": "Ann"], expect: 200)
            _ = try await check("POST", "users/me", token: token, json: ["nickname": "x"], expect: 400)
            let recent = Date.ISO8601FormatStyle(includingFractionalSeconds: true).format(Date().addingTimeInterval(-7200))
            let sync: [String: Any] = [
                "localMeals": [["localId": "local-1", "name": "Soup", "carbEstimate": 12.5, "confidenceLevel": 0.8, "createdAt": recent]]
            ]
            _ = try await check("POST", "meals/sync", token: token, json: sync, expect: 200)
            let meals = try await check("GET", "meals", query: "?limit=10", token: token, expect: 200)
            #expect(meals.data["meals"].array.count == 2)
            _ = try await check("GET", "meals", query: "?limit=1000", token: token, expect: 400)
            _ = try await check("GET", "insights", token: token, expect: 200)
            _ = try await check("GET", "user/stats", token: token, expect: 200)
            _ = try await check("GET", "subscriptions/status", token: token, expect: 200)
            let history = try await check("GET", "chat/history", token: token, expect: 200)
            #expect(history.data["messages"].array.count == 1)
            _ = try await check("GET", "jobs/\(job.rawValue)", token: token, expect: 200)
            _ = try await check("GET", "jobs/\(Self.dummyID)", token: token, expect: 404)
            let login = ["provider": "google", "provider_uid": "g-1", "client_timestamp": recent]
            _ = try await check("POST", "logins", token: token, json: login, expect: 202)
            _ = try await check("POST", "logins/signout", token: token, json: login.merging(["provider": "Myspace"]) { $1 }, expect: 400)
            _ = try await check("POST", "auth/revoke", token: token, json: [String: Any](), expect: 200)
            _ = try await check("GET", "auth/me", token: token, expect: 401)

            let other = try await api.register(client)
            _ = try await check("DELETE", "users/me", token: other.accessToken, expect: 200)
            _ = try await check("DELETE", "users/me", token: other.accessToken, expect: 401)
        }
    }
}
