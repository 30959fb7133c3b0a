import Foundation
import HummingbirdTesting
import Testing

/// Linking a verified identity to an account by email, without the "classic-federated merge" pre-hijacking attack
/// (Sudhodanan and Paverd, USENIX Security 2022): an account whose email was never proven is taken over cleanly by
/// whoever proves it, never shared with whoever created it.
@Suite struct AccountLinkingTests {
    static func apple(_ api: TestAPI, _ client: any TestClientProtocol, sub: String, email: String) async throws -> CallResult {
        try await client.call(
            .post, "auth/apple",
            json: ["identityToken": try await api.appleKeys.sign(.apple(sub: sub, email: email)), "authorizationCode": "x"])
    }

    static func providers(_ api: TestAPI, _ userID: String) async throws -> [String] {
        try await api.database.query("SELECT provider FROM identities WHERE user_id = $1 ORDER BY provider", [userID])
            .map { try $0.decode("provider", as: String.self) }
    }

    @Test func aPasswordSignUpOfTheVictimsEmailIsTakenOverBySignInWithApple() async throws {
        try await TestAPI.run { api, client in
            // The attacker registers the victim's address with a password they know, and keeps the session.
            let attacker = try await api.register(client, email: "victim@example.com", password: "attacker knows")
            // The victim later signs in with Apple, whose email is verified.
            let victim = try await Self.apple(api, client, sub: "001.victim", email: "Victim@Example.com")
            #expect(victim.status == 200, "\(victim.text)")
            let victimUser = try #require(victim.data["user"]["id"].string)
            #expect(victim.data["user"]["email"].string == "victim@example.com")
            #expect(try await Self.providers(api, victimUser) == ["apple"])
            // The attacker is out: their password, their refresh token and their access token.
            let login = try await client.call(.post, "auth/login", json: ["email": "victim@example.com", "password": "attacker knows"])
            #expect(login.status == 401 && login.errorCode == "INVALID_CREDENTIALS")
            let refresh = try await client.call(.post, "auth/refresh", json: ["refreshToken": attacker.refreshToken])
            #expect(refresh.status == 401)
            #expect(try await client.call(.get, "auth/me", token: attacker.accessToken).status == 401)
            // The victim is in, and the email now counts as proven.
            #expect(try await client.call(.get, "auth/me", token: victim.data["accessToken"].string).status == 200)
            let verified = try await api.database.query("SELECT email_verified FROM users WHERE id = $1", [victimUser])
            #expect(try verified[0].decode("email_verified", as: Bool.self))
        }
    }

    @Test func aPasswordSignUpAfterSignInWithAppleIsRefusedAndChangesNothing() async throws {
        try await TestAPI.run { api, client in
            let apple = try await Self.apple(api, client, sub: "001.first", email: "first@example.com")
            let userID = try #require(apple.data["user"]["id"].string)
            let register = try await client.call(
                .post, "auth/register", json: ["email": "first@example.com", "password": "someone else"])
            #expect(register.status == 400 && register.errorCode == "EMAIL_ALREADY_REGISTERED", "\(register.text)")
            #expect(register.json["error"]["details"]["field"].string == "email")
            #expect(try await Self.providers(api, userID) == ["apple"])
            #expect(try await client.call(.get, "auth/me", token: apple.data["accessToken"].string).status == 200)
            let again = try await Self.apple(api, client, sub: "001.first", email: "first@example.com")
            #expect(again.data["user"]["id"].string == userID)
        }
    }

    @Test func aMagicLinkProvesTheEmailAndLaterVerifiedIdentitiesLinkToIt() async throws {
        try await TestAPI.run { api, client in
            let attacker = try await api.register(client, email: "owner@example.com", password: "attacker knows")
            // The owner of the address asks for a link and follows it.
            let link = try #require(try await api.dependencies.accounts.magicLinkToken(email: "owner@example.com"))
            let owner = try await client.call(.post, "auth/magic-link/verify", json: ["token": link.token])
            #expect(owner.status == 200, "\(owner.text)")
            #expect(owner.data["user"]["id"].string == attacker.id)
            let ownerAccess = try #require(owner.data["accessToken"].string)
            // Whoever set the password is out.
            let login = try await client.call(.post, "auth/login", json: ["email": "owner@example.com", "password": "attacker knows"])
            #expect(login.status == 401)
            #expect(try await client.call(.get, "auth/me", token: attacker.accessToken).status == 401)
            #expect(try await client.call(.post, "auth/refresh", json: ["refreshToken": attacker.refreshToken]).status == 401)

            // Proven now: Sign in with Apple links to it and takes nothing away from the owner's session.
            let apple = try await Self.apple(api, client, sub: "001.owner", email: "owner@example.com")
            #expect(apple.data["user"]["id"].string == attacker.id)
            #expect(try await client.call(.get, "auth/me", token: ownerAccess).status == 200)
            #expect(try await Self.providers(api, attacker.id) == ["apple"])
            // A second link to a proven account takes nothing away either.
            let link2 = try #require(try await api.dependencies.accounts.magicLinkToken(email: "owner@example.com"))
            #expect(try await client.call(.post, "auth/magic-link/verify", json: ["token": link2.token]).status == 200)
            #expect(try await client.call(.get, "auth/me", token: apple.data["accessToken"].string).status == 200)
        }
    }

    @Test func twoVerifiedIdentitiesOfOneEmailShareTheAccountWithoutSigningEachOtherOut() async throws {
        try await TestAPI.run { api, client in
            let phone = try await Self.apple(api, client, sub: "001.phone", email: "both@example.com")
            let userID = try #require(phone.data["user"]["id"].string)
            let other = try await Self.apple(api, client, sub: "001.other-app", email: "both@example.com")
            #expect(other.data["user"]["id"].string == userID)
            #expect(try await Self.providers(api, userID) == ["apple", "apple"])
            #expect(try await client.call(.get, "auth/me", token: phone.data["accessToken"].string).status == 200)
            #expect(try await client.call(.get, "auth/me", token: other.data["accessToken"].string).status == 200)
        }
    }
}
