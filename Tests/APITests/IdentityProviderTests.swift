import Foundation
import JWTKit
import Testing

@Suite struct AppleSignInTests {
    @Test func firstSignInCreatesTheAccountAndKeepsAppleNames() async throws {
        try await TestAPI.run { api, client in
            let claims = TestIdentityClaims.apple(sub: "001234.apple.0001", email: "relay@privaterelay.appleid.com")
            let first = try await client.call(
                .post, "auth/apple",
                json: [
                    "identityToken": try await api.appleKeys.sign(claims), "authorizationCode": "c8f",
                    "user": ["email": "relay@privaterelay.appleid.com", "firstName": "John", "lastName": "Doe"],
                ])
            #expect(first.status == 200)
            #expect(first.data["user"]["id"].string == "001234.apple.0001")
            #expect(first.data["user"]["firstName"].string == "John")
            #expect(first.data["user"]["email"].string == "relay@privaterelay.appleid.com")
            #expect(first.data["accessToken"].string != nil && first.data["refreshToken"].string != nil)

            // Later sign-ins carry no name: the stored one stays, and no second account appears.
            let again = try await client.call(
                .post, "auth/apple",
                json: [
                    "identityToken": try await api.appleKeys.sign(claims), "authorizationCode": "c9f",
                ])
            #expect(again.status == 200)
            #expect(again.data["user"]["id"].string == "001234.apple.0001")
            #expect(again.data["user"]["firstName"].string == "John")
            let users = try await api.database.query("SELECT count(*) AS n FROM users")
            #expect(try users[users.startIndex].decode("n", as: Int.self) == 1)
            // One JWKS fetch served both sign-ins (cached).
            #expect(api.jwks.fetchCount("apple") == 1)
        }
    }

    @Test func badIdentityTokensAreRefused() async throws {
        try await TestAPI.run { api, client in
            let keys = api.appleKeys
            let valid = TestIdentityClaims.apple()
            let cases: [(String, String)] = [
                ("alg none", try keys.unsigned(valid)),
                ("HS256 keyed with the public key", try await keys.signHS256WithPublicKey(valid)),
                ("expired", try await keys.sign(.apple(expiresIn: -60))),
                ("wrong audience", try await keys.sign(.apple(aud: "com.someone.else"))),
                ("wrong issuer", try await keys.sign(.apple(iss: "https://evil.example.com"))),
                ("unknown key id", try await keys.signWithUnknownKey(valid)),
                ("garbage", "not.a.jwt"),
            ]
            for (name, token) in cases {
                let response = try await client.call(.post, "auth/apple", json: ["identityToken": token, "authorizationCode": "x"])
                #expect(response.status == 401, "\(name)")
                #expect(response.errorCode == "INVALID_TOKEN", "\(name)")
            }
            let users = try await api.database.query("SELECT count(*) AS n FROM users")
            #expect(try users[users.startIndex].decode("n", as: Int.self) == 0)
            // The unknown key id caused at most one refetch beyond the first fetch: no request storm.
            #expect(api.jwks.fetchCount("apple") <= 2)
        }
    }

    @Test func rotatedKeysAreFetchedOnFirstUse() async throws {
        try await TestAPI.run { api, client in
            let before = try await client.call(
                .post, "auth/apple",
                json: [
                    "identityToken": try await api.appleKeys.sign(.apple(sub: "rot.1")), "authorizationCode": "x",
                ])
            #expect(before.status == 200)
            #expect(api.jwks.fetchCount("apple") == 1)
            // Apple publishes a new key; a token signed with it must work once the refetch interval allows.
            let rotated = try api.appleKeys.add(kid: "apple-2")
            try await Task.sleep(for: .seconds(1.2))
            let after = try await client.call(
                .post, "auth/apple",
                json: [
                    "identityToken": try await api.appleKeys.sign(.apple(sub: "rot.2"), kid: rotated.kid), "authorizationCode": "x",
                ])
            #expect(after.status == 200)
            #expect(api.jwks.fetchCount("apple") == 2)
        }
    }

    @Test func withoutAppleClientIDTheRouteSaysSo() async throws {
        try await TestAPI.run(apple: false) { api, client in
            let response = try await client.call(
                .post, "auth/apple",
                json: [
                    "identityToken": try await api.appleKeys.sign(.apple()), "authorizationCode": "x",
                ])
            #expect(response.status == 503)  // the operator's fault, not a server bug
            #expect(response.errorCode == "CONFIGURATION_ERROR")
        }
    }

    @Test func missingFieldsAreValidationErrors() async throws {
        try await TestAPI.run { _, client in
            let response = try await client.call(.post, "auth/apple", json: ["authorizationCode": "x"])
            #expect(response.status == 400)
            #expect(response.json["error"]["details"]["field"].string == "identityToken")
        }
    }
}

@Suite struct ExtraIssuerTests {
    func clerkToken(_ api: TestAPI, sub: String, email: String? = nil, expiresIn: TimeInterval = 600) async throws -> String {
        let claims = TestIdentityClaims(
            iss: .init(value: api.clerkIssuer), sub: .init(value: sub), aud: .init(value: ["anything"]), iat: .init(value: Date()),
            exp: .init(value: Date().addingTimeInterval(expiresIn)), email: email, email_verified: email == nil ? nil : true)
        return try await api.clerkKeys.sign(claims)
    }

    @Test func clerkTokensWorkAfterTheAccountIsCreated() async throws {
        try await TestAPI.run { api, client in
            let token = try await clerkToken(api, sub: "user_2abc", email: "clerk@example.com")
            let before = try await client.call(.get, "users/me", token: token)
            #expect(before.status == 404)
            #expect(before.errorCode == "NOT_FOUND")

            let created = try await client.call(.post, "users/me", token: token, json: ["firstName": "Cleo", "timeZone": "Asia/Tokyo"])
            #expect(created.status == 201)
            #expect(created.data["firstName"].string == "Cleo")
            #expect(created.data["timeZone"].string == "Asia/Tokyo")

            let after = try await client.call(.get, "users/me", token: token)
            #expect(after.status == 200)
            #expect(after.data["email"].string == "clerk@example.com")
            #expect(try await client.call(.get, "meals", token: token).status == 200)

            let updated = try await client.call(.post, "users/me", token: token, json: ["lastName": "Stone"])
            #expect(updated.status == 200)
            #expect(updated.data["lastName"].string == "Stone")
        }
    }

    @Test func expiredOrForeignClerkTokensAreRefused() async throws {
        try await TestAPI.run { api, client in
            let expired = try await clerkToken(api, sub: "user_x", expiresIn: -30)
            let expiredAnswer = try await client.call(.get, "users/me", token: expired)
            #expect(expiredAnswer.status == 401)
            #expect(expiredAnswer.errorCode == "TOKEN_EXPIRED")
            // Signed by Apple's key but claiming Clerk's issuer.
            let claims = TestIdentityClaims(
                iss: .init(value: api.clerkIssuer), sub: .init(value: "user_y"), aud: .init(value: ["a"]), iat: .init(value: Date()),
                exp: .init(value: Date().addingTimeInterval(600)), email: nil, email_verified: nil)
            let forged = try await api.appleKeys.sign(claims)
            let forgedAnswer = try await client.call(.get, "users/me", token: forged)
            #expect(forgedAnswer.status == 401)
            #expect(forgedAnswer.errorCode == "UNAUTHORIZED")
        }
    }
}
