import Accounts
import Foundation
import HummingbirdTesting
import JWTKit
import TestSupport
import Testing

@Suite struct SessionTests {
    @Test func withRotationRefreshRotatesAndTheOldTokenStopsWorking() async throws {
        try await TestAPI.run(environment: ["REFRESH_TOKEN_ROTATION": "true", "REFRESH_TOKEN_REUSE_INTERVAL": "0"]) { api, client in
            let account = try await api.register(client)
            let first = try await client.call(.post, "auth/refresh", json: ["refreshToken": account.refreshToken])
            #expect(first.status == 200)
            let newRefresh = try #require(first.data["refreshToken"].string)
            let newAccess = try #require(first.data["accessToken"].string)
            #expect(newRefresh != account.refreshToken)
            #expect(try await client.call(.get, "auth/me", token: newAccess).status == 200)

            let second = try await client.call(.post, "auth/refresh", json: ["refreshToken": newRefresh])
            #expect(second.status == 200)
            // Only hashes are stored.
            let stored = try await api.database.query(
                "SELECT count(*) AS n FROM refresh_tokens WHERE token_hash = convert_to($1, 'UTF8')", [newRefresh])
            #expect(try stored[stored.startIndex].decode("n", as: Int.self) == 0)
        }
    }

    @Test func withRotationReusingARotatedRefreshTokenRevokesTheWholeSignIn() async throws {
        try await TestAPI.run(environment: ["REFRESH_TOKEN_ROTATION": "true", "REFRESH_TOKEN_REUSE_INTERVAL": "0"]) { api, client in
            let account = try await api.register(client)
            let rotated = try await client.call(.post, "auth/refresh", json: ["refreshToken": account.refreshToken])
            let stolenLater = try #require(rotated.data["refreshToken"].string)
            let access = try #require(rotated.data["accessToken"].string)

            let replay = try await client.call(.post, "auth/refresh", json: ["refreshToken": account.refreshToken])
            #expect(replay.status == 401)
            #expect(replay.errorCode == "INVALID_REFRESH_TOKEN")
            // The family is gone: the newest refresh token and every access token of that sign-in.
            #expect(try await client.call(.post, "auth/refresh", json: ["refreshToken": stolenLater]).status == 401)
            #expect(try await client.call(.get, "auth/me", token: access).status == 401)
            #expect(try await client.call(.get, "auth/me", token: account.accessToken).status == 401)

            // Another sign-in of the same user is untouched.
            let other = try await client.call(.post, "auth/login", json: ["email": account.email, "password": "correct horse"])
            #expect(try await client.call(.get, "auth/me", token: other.data["accessToken"].string).status == 200)
        }
    }

    @Test func revokeReallyRevokes() async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            let revoke = try await client.call(.post, "auth/revoke", json: ["refreshToken": account.refreshToken])
            #expect(revoke.status == 200)
            #expect(revoke.data["revoked"].bool == true)
            #expect(try await client.call(.post, "auth/refresh", json: ["refreshToken": account.refreshToken]).status == 401)
            #expect(try await client.call(.get, "auth/me", token: account.accessToken).status == 401)

            // With no refresh token, the bearer access token's sign-in is revoked.
            let second = try await client.call(.post, "auth/login", json: ["email": account.email, "password": "correct horse"])
            let access = try #require(second.data["accessToken"].string)
            let refresh = try #require(second.data["refreshToken"].string)
            // An empty body is fine: the bearer token says which sign-in.
            #expect(try await client.call(.post, "auth/revoke", token: access).status == 200)
            #expect(try await client.call(.get, "auth/me", token: access).status == 401)
            #expect(try await client.call(.post, "auth/refresh", json: ["refreshToken": refresh]).status == 401)

            // Neither token nor header: the client is told what to send.
            let empty = try await client.call(.post, "auth/revoke")
            #expect(empty.status == 400)
            #expect(empty.errorCode == "VALIDATION_ERROR")
        }
    }

    @Test func expiredAccessTokenIsAClientActionable401() async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            let tokens = await AccessTokens(secret: TestAPI.jwtSecret, lifetime: .seconds(60))
            let session = try await api.database.query("SELECT family_id FROM refresh_tokens WHERE user_id = $1", [account.id])
            let family: UUID = try session[session.startIndex].decode("family_id")
            let expired = try await tokens.issue(userID: account.id, sessionID: family, email: nil, now: Date().addingTimeInterval(-120))
            let response = try await client.call(.get, "auth/me", token: expired)
            #expect(response.status == 401)
            #expect(response.errorCode == "TOKEN_EXPIRED")
            let fresh = try await tokens.issue(userID: account.id, sessionID: family, email: nil)
            #expect(try await client.call(.get, "auth/me", token: fresh).status == 200)
        }
    }

    @Test func forgedAccessTokensAreRefused() async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            let parts = account.accessToken.split(separator: ".").map(String.init)
            // A payload edited to another user, signature left as it was.
            var payload = try JSONSerialization.jsonObject(with: Data(base64URLDecoding: parts[1])) as! [String: Any]
            payload["sub"] = "someone-else"
            let edited = parts[0] + "." + base64URL(try JSONSerialization.data(withJSONObject: payload)) + "." + parts[2]
            // alg none, no signature.
            let none = base64URL(Data(#"{"alg":"none","typ":"JWT"}"#.utf8)) + "." + parts[1] + "."
            // Signed with another secret.
            let other = await AccessTokens(secret: Array("another secret another secret another".utf8), lifetime: .seconds(600))
            let family = UUID()
            let foreign = try await other.issue(userID: account.id, sessionID: family, email: nil)
            for token in [edited, none, foreign, "garbage", parts[0] + "." + parts[1]] {
                let response = try await client.call(.get, "auth/me", token: token)
                #expect(response.status == 401, "\(token.prefix(20))")
                #expect(response.errorCode == "UNAUTHORIZED")
            }
            let missing = try await client.call(.get, "auth/me")
            #expect(missing.status == 401 && missing.errorCode == "UNAUTHORIZED")
            let basic = try await client.call(.get, "auth/me", headers: [.authorization: "Basic dXNlcjpwYXNz"])
            #expect(basic.status == 401)
        }
    }

    @Test func deletingTheAccountErasesEveryRow() async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            let keep = try await api.register(client)
            for user in [account, keep] {
                let sync = try await client.call(
                    .post, "meals/sync", token: user.accessToken,
                    json: [
                        "localMeals": [
                            ["localId": "a", "name": "Toast", "carbEstimate": 30, "createdAt": "2026-01-01T08:00:00Z"]
                        ]
                    ])
                #expect(sync.status == 200)
                try await api.database.execute(
                    "INSERT INTO chat_messages (user_id, message, response, message_type) VALUES ($1, 'q', 'a', 'general')", [user.id])
                try await api.database.execute(
                    "INSERT INTO devices (user_id, token, platform) VALUES ($1, $2, 'ios')", [user.id, "token-\(user.id)"])
                try await api.database.execute(
                    "INSERT INTO usage_counters (user_id, kind, period, used) VALUES ($1, 'chat', '2026-01-01', 1)", [user.id])
                try await api.database.execute(
                    "INSERT INTO meal_photos (user_id, content_type, byte_size, bytes) VALUES ($1, 'image/jpeg', 1, $2)",
                    [user.id, [UInt8(1)]])
            }
            let deleted = try await client.call(.delete, "users/me", token: account.accessToken)
            #expect(deleted.status == 200)
            #expect(deleted.data["deleted"].bool == true)

            let tables = [
                "users": "id", "identities": "user_id", "refresh_tokens": "user_id", "login_events": "user_id",
                "usage_counters": "user_id", "meals": "user_id", "meal_photos": "user_id", "chat_messages": "user_id",
                "devices": "user_id",
            ]
            for (table, column) in tables {
                let gone = try await api.database.query("SELECT count(*) AS n FROM \(table) WHERE \(column) = $1", [account.id])
                #expect(try gone[gone.startIndex].decode("n", as: Int.self) == 0, "\(table)")
                let kept = try await api.database.query("SELECT count(*) AS n FROM \(table) WHERE \(column) = $1", [keep.id])
                #expect(try kept[kept.startIndex].decode("n", as: Int.self) >= 1, "\(table) of the other user")
            }
            #expect(try await client.call(.get, "auth/me", token: account.accessToken).status == 401)
            #expect(try await client.call(.post, "auth/refresh", json: ["refreshToken": account.refreshToken]).status == 401)
            #expect(try await client.call(.post, "auth/login", json: ["email": account.email, "password": "correct horse"]).status == 401)
        }
    }

    @Test func profileUpdatesAreValidated() async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            let updated = try await client.call(
                .post, "users/me", token: account.accessToken,
                json: [
                    "firstName": "Zed", "timeZone": "Europe/Berlin", "emailRemindersEnabled": false,
                ])
            #expect(updated.status == 200)
            #expect(updated.data["firstName"].string == "Zed")
            #expect(updated.data["lastName"].string == "User")
            #expect(updated.data["timeZone"].string == "Europe/Berlin")
            #expect(updated.data["emailRemindersEnabled"].bool == false)

            for (body, field) in [
                (["timeZone": "Mars/Olympus"], "timeZone"), (["subscriptionTier": "pro"], "subscriptionTier"),
                (["profileImageUrl": "javascript:alert(1)"], "profileImageUrl"),
                (["firstName": String(repeating: "x", count: 101)], "firstName"),
            ] {
                let refused = try await client.call(.post, "users/me", token: account.accessToken, json: body)
                #expect(refused.status == 400, "\(field)")
                #expect(refused.json["error"]["details"]["field"].string == field)
            }
            let me = try await client.call(.get, "users/me", token: account.accessToken)
            #expect(me.data["subscriptionTier"].string == "free")
            #expect(me.data["timeZone"].string == "Europe/Berlin")
        }
    }
}

extension Data {
    init(base64URLDecoding text: String) {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64.append("=") }
        self = Data(base64Encoded: base64) ?? Data()
    }
}

/// The session cache of each API process: a sign-out or an account deletion in one process reaches the others
/// through Redis long before their cache entries would expire.
@Suite struct SessionCacheTests {
    /// `jobs/{id}` needs only who calls: with a cached token it reads nothing from Postgres, so only the cache's
    /// invalidation can refuse it (404 for an unknown job means the token was accepted).
    static func accepted(_ client: any TestClientProtocol, _ token: String) async throws -> Bool {
        let status = try await client.call(.get, "jobs/\(UUID().uuidString.lowercased())", token: token).status
        #expect(status == 404 || status == 401)
        return status == 404
    }

    @Test func aSignOutInOneProcessReachesTheOthers() async throws {
        try await TestAPI.run(environment: ["SESSION_CACHE_SECONDS": "300"]) { api, client in
            let account = try await api.register(client)
            try await api.otherProcess { (other: any TestClientProtocol) async throws in
                #expect(try await Self.accepted(other, account.accessToken))
                #expect(try await client.call(.post, "auth/revoke", token: account.accessToken).status == 200)
                #expect(try await !Self.accepted(client, account.accessToken), "the revoking process forgets at once")
                #expect(try await eventually(timeout: .seconds(5)) { try await !Self.accepted(other, account.accessToken) })
            }
        }
    }

    @Test func anAccountDeletedInOneProcessIsGoneInTheOthers() async throws {
        try await TestAPI.run(environment: ["SESSION_CACHE_SECONDS": "300"]) { api, client in
            let account = try await api.register(client)
            try await api.otherProcess { (other: any TestClientProtocol) async throws in
                #expect(try await Self.accepted(other, account.accessToken))
                #expect(try await client.call(.delete, "users/me", token: account.accessToken).status == 200)
                #expect(try await eventually(timeout: .seconds(5)) { try await !Self.accepted(other, account.accessToken) })
            }
        }
    }

    /// Routes that read the account check the sign-in in the same query, so they refuse a revoked token even in a
    /// process whose cache still holds it (here: no message can arrive, the cache is the other process's).
    @Test func routesThatReadTheAccountNeverServeARevokedSession() async throws {
        try await TestAPI.run(environment: ["SESSION_CACHE_SECONDS": "300"]) { api, client in
            let account = try await api.register(client)
            #expect(try await client.call(.get, "auth/me", token: account.accessToken).status == 200)
            // Revoked behind the API's back: only the database knows.
            try await api.database.execute("UPDATE refresh_tokens SET revoked_at = now() WHERE user_id = $1", [account.id])
            #expect(try await client.call(.get, "auth/me", token: account.accessToken).status == 401)
            #expect(try await client.call(.get, "meals", token: account.accessToken).status == 401)
            // Having seen it revoked, the process stops vouching for the token on routes that need only who calls.
            #expect(try await !SessionCacheTests.accepted(client, account.accessToken))
        }
    }

    /// `GET /meals` reads the account inside its page statement (tier, existence, live sign-in), trusting the cache only
    /// for who calls: a revoked sign-in or a deleted user is refused there too, and the cache forgets the sign-in.
    @Test func theMealsPageChecksTheSignInInItsOwnStatement() async throws {
        try await TestAPI.run(environment: ["SESSION_CACHE_SECONDS": "300"]) { api, client in
            let revoked = try await api.register(client)
            let deleted = try await api.register(client)
            #expect(try await client.call(.get, "meals", token: revoked.accessToken).status == 200)
            #expect(try await client.call(.get, "meals", token: deleted.accessToken).status == 200)
            try await api.database.execute("UPDATE refresh_tokens SET revoked_at = now() WHERE user_id = $1", [revoked.id])
            try await api.database.execute("DELETE FROM users WHERE id = $1", [deleted.id])
            let refused = try await client.call(.get, "meals", token: revoked.accessToken)
            #expect(refused.status == 401 && refused.errorCode == "UNAUTHORIZED")
            #expect(try await client.call(.get, "meals", token: deleted.accessToken).status == 401)
            #expect(try await !SessionCacheTests.accepted(client, revoked.accessToken))
        }
    }

    @Test func zeroTurnsTheCacheOff() async throws {
        try await TestAPI.run(environment: ["SESSION_CACHE_SECONDS": "0"]) { api, client in
            let account = try await api.register(client)
            #expect(try await Self.accepted(client, account.accessToken))
            try await api.database.execute("UPDATE refresh_tokens SET revoked_at = now() WHERE user_id = $1", [account.id])
            #expect(try await !Self.accepted(client, account.accessToken))
            #expect(api.dependencies.accounts.sessions.count == 0)
        }
    }
}
