import Accounts
import Foundation
import Settings
import Synchronization
import Testing
import carbscan

/// Refresh tokens as the seeds' app uses them (one token, stored at sign-in) and, with `REFRESH_TOKEN_ROTATION`, as a
/// rotating client over a real network: retries and concurrent refreshes survive the reuse interval, theft does not.
@Suite struct RefreshTokenTests {
    /// An `AccountService` on the test's database whose clock the test moves.
    final class Clock: Sendable {
        let time = Mutex(Date())
        func advance(days: Double = 0, seconds: Double = 0) { time.withLock { $0 += days * 86_400 + seconds } }
        func service(_ api: TestAPI, environment: [String: String] = [:]) throws -> AccountService {
            let live = api.dependencies.accounts
            var env = environment
            env["JWT_SECRET"] = String(decoding: TestAPI.jwtSecret, as: UTF8.self)
            return AccountService(
                database: api.database, settings: try AuthSettings(environment: EnvironmentReader(env)), accessTokens: live.accessTokens,
                apple: nil, extraIssuers: [], logger: TestAPI.logger, now: { self.time.withLock { $0 } })
        }
    }

    @Test func aSeedStyleAppRefreshesWithItsOneTokenUntilItExpires() async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            // Seed 001's app: refresh three times with the token from sign-up, store only the access token.
            for _ in 0..<3 {
                let refreshed = try await client.call(.post, "auth/refresh", json: ["refreshToken": account.refreshToken])
                #expect(refreshed.status == 200, "\(refreshed.text)")
                #expect(refreshed.data["refreshToken"].string == account.refreshToken)
                #expect(try await client.call(.get, "auth/me", token: refreshed.data["accessToken"].string).status == 200)
            }
            // Over days: the same token works on day 1, 30 and 89 of its 90, and not after.
            let clock = Clock()
            let accounts = try clock.service(api)
            for step in [1.0, 29, 59] {  // days 1, 30, 89
                clock.advance(days: step)
                let session = try await accounts.refresh(account.refreshToken)
                #expect(session.refreshToken == account.refreshToken)
                #expect(try await client.call(.get, "auth/me", token: session.accessToken).status == 200)
            }
            clock.advance(days: 2)  // day 91
            await #expect(throws: AccountError.invalidRefreshToken(reason: "it expired")) {
                try await accounts.refresh(account.refreshToken)
            }
            // A sign-out still ends it at once.
            let other = try await api.register(client)
            _ = try await client.call(.post, "auth/revoke", json: ["refreshToken": other.refreshToken])
            let revoked = try await client.call(.post, "auth/refresh", json: ["refreshToken": other.refreshToken])
            #expect(revoked.status == 401 && revoked.errorCode == "INVALID_REFRESH_TOKEN")
        }
    }

    static let rotation = ["REFRESH_TOKEN_ROTATION": "true"]

    @Test func withRotationTwoRefreshesAtOnceBothGetTheSameSuccessor() async throws {
        try await TestAPI.run(environment: Self.rotation) { api, client in
            let account = try await api.register(client)
            // The same token, twice at once: one rotates, the other waits for it and is given its successor.
            async let first = client.call(.post, "auth/refresh", json: ["refreshToken": account.refreshToken])
            async let second = client.call(.post, "auth/refresh", json: ["refreshToken": account.refreshToken])
            let (a, b) = try await (first, second)
            #expect(a.status == 200 && b.status == 200, "\(a.text) \(b.text)")
            let successor = try #require(a.data["refreshToken"].string)
            #expect(successor != account.refreshToken)
            #expect(b.data["refreshToken"].string == successor)
            #expect(try await client.call(.get, "auth/me", token: a.data["accessToken"].string).status == 200)
            #expect(try await client.call(.get, "auth/me", token: b.data["accessToken"].string).status == 200)
            // The sign-in goes on with the successor, and no stray sibling token was minted beside it.
            let next = try await client.call(.post, "auth/refresh", json: ["refreshToken": successor])
            #expect(next.status == 200)
            let rows = try await api.database.query("SELECT count(*)::int AS n FROM refresh_tokens WHERE user_id = $1", [account.id])
            #expect(try rows[0].decode("n", as: Int.self) == 3)
        }
    }

    @Test func withRotationARetriedRefreshWhoseAnswerWasLostGetsTheSameSuccessor() async throws {
        try await TestAPI.run(environment: Self.rotation) { api, client in
            let account = try await api.register(client)
            let clock = Clock()
            let accounts = try clock.service(api, environment: Self.rotation)
            let lost = try await accounts.refresh(account.refreshToken)  // the answer never reached the app
            clock.advance(seconds: 4)
            let retried = try await accounts.refresh(account.refreshToken)
            #expect(retried.refreshToken == lost.refreshToken)
            #expect(retried.sessionID == lost.sessionID)
            // Rotated twice more within the interval: the first token still leads to the live end of the chain.
            let second = try await accounts.refresh(retried.refreshToken)
            let third = try await accounts.refresh(second.refreshToken)
            clock.advance(seconds: 5)
            #expect(try await accounts.refresh(account.refreshToken).refreshToken == third.refreshToken)
            #expect(try await client.call(.get, "auth/me", token: third.accessToken).status == 200)
        }
    }

    @Test func withRotationAReusePastTheIntervalRevokesTheSignIn() async throws {
        try await TestAPI.run(environment: Self.rotation) { api, client in
            let account = try await api.register(client)
            let clock = Clock()
            let accounts = try clock.service(api, environment: Self.rotation)
            let rotated = try await accounts.refresh(account.refreshToken)
            clock.advance(seconds: 11)  // past the default 10 s
            await #expect(throws: AccountError.invalidRefreshToken(reason: "it was already used")) {
                try await accounts.refresh(account.refreshToken)
            }
            // The thief's replay ended the whole sign-in: the successor and every access token of it.
            let successor = try await client.call(.post, "auth/refresh", json: ["refreshToken": rotated.refreshToken])
            #expect(successor.status == 401 && successor.errorCode == "INVALID_REFRESH_TOKEN")
            #expect(try await client.call(.get, "auth/me", token: rotated.accessToken).status == 401)
            #expect(try await client.call(.get, "auth/me", token: account.accessToken).status == 401)
        }
    }

    @Test func rotationSettingsAreChecked() throws {
        #expect(try AuthSettings(environment: [:]).refreshTokenRotation == false)
        #expect(try AuthSettings(environment: [:]).refreshTokenReuseInterval == .seconds(10))
        let on = try AuthSettings(environment: ["REFRESH_TOKEN_ROTATION": "true", "REFRESH_TOKEN_REUSE_INTERVAL": "2.5"])
        #expect(on.refreshTokenRotation && on.refreshTokenReuseInterval == .milliseconds(2500))
        #expect(throws: SettingError.self) { try AuthSettings(environment: ["REFRESH_TOKEN_ROTATION": "maybe"]) }
        #expect(throws: SettingError.self) { try AuthSettings(environment: ["REFRESH_TOKEN_REUSE_INTERVAL": "-1"]) }
    }
}
