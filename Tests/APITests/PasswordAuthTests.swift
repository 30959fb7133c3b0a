import Foundation
import HTTPTypes
import JSON
import Queue
import Testing

@Suite struct PasswordAuthTests {
    @Test func registerThenLoginReturnsTokensAndTheUser() async throws {
        try await TestAPI.run { api, client in
            let registered = try await client.call(
                .post, "auth/register", json: ["email": "Ann@Example.com", "password": "long enough", "name": "Ann Lee"])
            #expect(registered.status == 201)
            #expect(registered.data["user"]["email"].string == "ann@example.com")
            #expect(registered.data["user"]["firstName"].string == "Ann")
            #expect(registered.data["user"]["lastName"].string == "Lee")
            #expect(registered.data["user"]["subscriptionTier"].string == "free")
            #expect(registered.data["user"]["profileImageUrl"].isNull)

            let login = try await client.call(.post, "auth/login", json: ["email": "ANN@example.com", "password": "long enough"])
            #expect(login.status == 200)
            #expect(login.data["user"]["id"].string == registered.data["user"]["id"].string)
            let token = try #require(login.data["accessToken"].string)
            let me = try await client.call(.get, "auth/me", token: token)
            #expect(me.data["id"].string == registered.data["user"]["id"].string)

            // The password is stored as a bcrypt hash, never as given.
            let rows = try await api.database.query("SELECT password_hash FROM users")
            let hash: String = try rows[rows.startIndex].decode("password_hash")
            #expect(hash.hasPrefix("$2b$04$") && !hash.contains("long enough"))
        }
    }

    @Test func registrationRefusesBadInputAndDuplicates() async throws {
        try await TestAPI.run { api, client in
            let bad = try await client.call(.post, "auth/register", json: ["email": "not-an-email", "password": "long enough"])
            #expect(bad.status == 400)
            #expect(bad.errorCode == "VALIDATION_ERROR")
            #expect(bad.json["error"]["details"]["field"].string == "email")

            let short = try await client.call(.post, "auth/register", json: ["email": "b@example.com", "password": "1234567"])
            #expect(short.status == 400)
            #expect(short.json["error"]["details"]["field"].string == "password")

            let missing = try await client.call(.post, "auth/register", json: ["email": "b@example.com"])
            #expect(missing.status == 400)
            #expect(missing.json["error"]["details"]["field"].string == "password")

            _ = try await api.register(client, email: "taken@example.com")
            let duplicate = try await client.call(.post, "auth/register", json: ["email": "TAKEN@example.com", "password": "another one"])
            #expect(duplicate.status == 400)  // seed 004 US-002; seed 001 has no 409
            #expect(duplicate.errorCode == "EMAIL_ALREADY_REGISTERED")
            let count = try await api.database.query("SELECT count(*) AS n FROM users")
            #expect(try count[count.startIndex].decode("n", as: Int.self) == 1)
        }
    }

    @Test func wrongPasswordAndUnknownEmailGetTheSameAnswer() async throws {
        try await TestAPI.run { api, client in
            _ = try await api.register(client, email: "c@example.com", password: "right password")
            let wrong = try await client.call(.post, "auth/login", json: ["email": "c@example.com", "password": "wrong password"])
            let unknown = try await client.call(.post, "auth/login", json: ["email": "nobody@example.com", "password": "right password"])
            #expect(wrong.status == 401 && unknown.status == 401)
            #expect(wrong.errorCode == "INVALID_CREDENTIALS" && unknown.errorCode == "INVALID_CREDENTIALS")
            #expect(wrong.json["error"]["message"].string == unknown.json["error"]["message"].string)
        }
    }

    @Test func failedLoginsAreThrottledPerAccount() async throws {
        try await TestAPI.run(environment: ["LOGIN_MAX_FAILURES": "3"]) { api, client in
            _ = try await api.register(client, email: "d@example.com", password: "right password")
            for _ in 0..<3 {
                let wrong = try await client.call(.post, "auth/login", json: ["email": "d@example.com", "password": "wrong password"])
                #expect(wrong.status == 401)
            }
            // Even the right password is refused until the window passes: guessing cannot continue.
            let blocked = try await client.call(.post, "auth/login", json: ["email": "d@example.com", "password": "right password"])
            #expect(blocked.status == 429)
            #expect(blocked.errorCode == "RATE_LIMITED")
            #expect(Int(blocked.headers[.retryAfter] ?? "") ?? 0 > 0)
            // Another account is not affected.
            _ = try await api.register(client, email: "e@example.com", password: "right password")
            let other = try await client.call(.post, "auth/login", json: ["email": "e@example.com", "password": "right password"])
            #expect(other.status == 200)
        }
    }

    @Test func loginAttemptsAreThrottledPerAddress() async throws {
        try await TestAPI.run(environment: ["LOGIN_MAX_ATTEMPTS_PER_IP": "2"], live: true) { api, client in
            _ = try await api.register(client, email: "f@example.com", password: "right password")
            for _ in 0..<2 {
                let attempt = try await client.call(.post, "auth/login", json: ["email": "f@example.com", "password": "right password"])
                #expect(attempt.status == 200)
            }
            let third = try await client.call(.post, "auth/login", json: ["email": "g@example.com", "password": "whatever123"])
            #expect(third.status == 429)
            #expect(third.errorCode == "RATE_LIMITED")
        }
    }

    @Test func signInAndSignOutRecordEventsAndEnqueueTheLoginWebhook() async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client, email: "h@example.com")
            let revoke = try await client.call(.post, "auth/revoke", json: ["refreshToken": account.refreshToken])
            #expect(revoke.status == 200)
            let events = try await api.database.query(
                "SELECT kind, provider, event_id FROM login_events WHERE user_id = $1 ORDER BY id", [account.id])
            #expect(try events.map { try $0.decode("kind", as: String.self) } == ["signin", "signout"])

            // One login-webhook job per event, owned by the user, carrying the event id (seed 002 payload).
            let stats = try await api.queue.stats().first { $0.queue == "webhooks" }
            #expect(stats?.queued == 2)
            let ids = try await api.queue.redis.send(["XRANGE", api.queue.keys("webhooks").stream, "-", "+"])
            let jobIDs = (ids.array ?? []).compactMap { $0.array?[1].array?[1].string }
            #expect(jobIDs.count == 2)
            var eventIDs: [String] = []
            for text in jobIDs {
                let id = try #require(JobID(rawValue: text))
                let record = try #require(try await api.queue.record(id))
                #expect(record.owner == account.id)
                let payload = try JSONValue(parsing: record.payload)
                #expect(payload["provider"] == .string("email"))
                #expect(payload["provider_uid"] == .string("h@example.com"))
                #expect(payload["email"] == .string("h@example.com"))
                if case .string(let id) = payload["eventId"] { eventIDs.append(id) }
            }
            let stored = try events.map { try $0.decode("event_id", as: UUID.self).uuidString.lowercased() }
            #expect(Set(eventIDs) == Set(stored))
        }
    }

    @Test func withoutALoginWebhookURLNothingIsEnqueued() async throws {
        try await TestAPI.run(environment: ["LOGIN_WEBHOOK_URL": ""]) { api, client in
            _ = try await api.register(client)
            let stats = try await api.queue.stats().first { $0.queue == "webhooks" }
            #expect((stats?.queued ?? 0) == 0)
            let events = try await api.database.query("SELECT count(*) AS n FROM login_events")
            #expect(try events[events.startIndex].decode("n", as: Int.self) == 1)
        }
    }
}

@Suite struct LoginReportTests {
    @Test func appReportedLoginsAreEnqueuedWithTheSeedPayload() async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            let body: [String: Any] = [
                "provider": "google", "provider_uid": "g-123", "email": "g@example.com", "display_name": "Gee",
                "client_timestamp": "2025-02-04T18:30:00Z",
            ]
            let response = try await client.call(.post, "logins", token: account.accessToken, json: body)
            #expect(response.status == 202)
            #expect(response.data["enqueued"].bool == true)
            let jobID = try #require(response.data["jobId"].string)
            #expect(response.headers[.location] == "/api/mobile/v1/jobs/\(jobID)")
            let job = try await client.call(.get, "jobs/\(jobID)", token: account.accessToken)
            #expect(job.data["type"].string == "login-webhook")
            let id = try #require(JobID(rawValue: jobID))
            let record = try #require(try await api.queue.record(id))
            let payload = try JSONValue(parsing: record.payload)
            #expect(payload["event"] == .string("signin"))
            #expect(payload["provider_uid"] == .string("g-123"))
            #expect(payload["client_timestamp"] == .string("2025-02-04T18:30:00.000Z"))

            let signout = try await client.call(.post, "logins/signout", token: account.accessToken, json: body)
            let signoutText = try #require(signout.data["jobId"].string)
            let signoutID = try #require(JobID(rawValue: signoutText))
            let signoutPayload = try JSONValue(parsing: try #require(try await api.queue.record(signoutID)).payload)
            #expect(signoutPayload["event"] == .string("signout"))
        }
    }

    @Test func badLoginReportsAreRefusedAndNothingIsEnqueued() async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            let before = try await api.queue.stats().first { $0.queue == "webhooks" }?.queued ?? 0
            let cases: [([String: Any], String)] = [
                (["provider": "myspace", "provider_uid": "1", "client_timestamp": "2025-02-04T18:30:00Z"], "provider"),
                (["provider": "apple", "client_timestamp": "2025-02-04T18:30:00Z"], "provider_uid"),
                (["provider": "apple", "provider_uid": "1", "client_timestamp": "yesterday"], "client_timestamp"),
                (["provider": "apple", "provider_uid": "1", "client_timestamp": "2025-02-04T18:30:00Z", "admin": true], "admin"),
            ]
            for (body, field) in cases {
                let response = try await client.call(.post, "logins", token: account.accessToken, json: body)
                #expect(response.status == 400, "\(field)")
                #expect(response.json["error"]["details"]["field"].string == field)
            }
            #expect(try await client.call(.post, "logins", json: cases[0].0).status == 401)
            let after = try await api.queue.stats().first { $0.queue == "webhooks" }?.queued ?? 0
            #expect(after == before)
        }
    }
}
