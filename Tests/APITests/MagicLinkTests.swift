import Foundation
import HummingbirdTesting
import Mail
import Store
import TestSupport
import Testing
import Workers

/// Magic-link sign-in end to end: the API, a worker sending the `email` job through libcurl, and a real local SMTP
/// server (aiosmtpd) that receives the mail.
@Suite struct MagicLinkTests {
    static func environment(_ sink: SMTPSink) -> [String: String] {
        [
            "SMTP_URL": sink.url, "MAIL_FROM": "CarbScan <signin@carbscan.test>",
            "MAGIC_LINK_URL": "https://app.carbscan.test/magic?token={token}", "LOGIN_MAX_ATTEMPTS_PER_IP": "1000",
        ]
    }

    /// The link's token, from the quoted-printable body (soft line breaks and `=XX` escapes undone).
    static func token(in mail: String) -> String? {
        var text = mail.replacingOccurrences(of: "=\r\n", with: "")
        while let escape = text.range(of: #"=[0-9A-F]{2}"#, options: .regularExpression) {
            let byte = UInt8(text[escape].dropFirst(), radix: 16) ?? 0x3F
            text.replaceSubrange(escape, with: String(UnicodeScalar(byte)))
        }
        guard let range = text.range(of: #"token=(ml_[A-Za-z0-9_\-]+)"#, options: .regularExpression) else { return nil }
        return String(text[range].dropFirst("token=".count))
    }

    @Test func theLinkInTheMailSignsInOnceAndOnlyOnce() async throws {
        let sink = try SMTPSink.start()
        defer { sink.stop() }
        try await TestAPI.run(environment: Self.environment(sink)) { api, client in
            let account = try await api.register(client)
            var settings = WorkerSettings()
            settings.mailFrom = "CarbScan <signin@carbscan.test>"
            let (worker, task) = api.startWorker(queue: "mail", settings: settings, mailer: try SMTPMailer(url: sink.url))
            defer { worker.stop() }
            let requested = try await client.call(.post, "auth/magic-link/request", json: ["email": account.email.uppercased()])
            #expect(requested.status == 200 && requested.data["sent"].bool == true, "\(requested.text)")
            #expect(requested.data["message"].string == "If this email is registered, you will receive a sign-in link shortly")
            #expect(try await eventually(timeout: .seconds(15)) { !sink.messages().isEmpty })
            let mail = try #require(sink.messages().first)
            #expect(mail.contains("X-Envelope-To: \(account.email)"))
            #expect(mail.contains("Subject: Your CarbScan sign-in link"))
            #expect(mail.contains("From: CarbScan <signin@carbscan.test>"))
            let token = try #require(Self.token(in: mail), "\(mail)")
            // Only the token's hash is stored.
            let stored = try await api.database.query("SELECT count(*)::int AS n FROM magic_links WHERE user_id = $1", [account.id])
            #expect(try stored[0].decode("n", as: Int.self) == 1)

            let signedIn = try await client.call(.post, "auth/magic-link/verify", json: ["token": token])
            #expect(signedIn.status == 200, "\(signedIn.text)")
            #expect(signedIn.data["user"]["id"].string == account.id)
            let accessToken = try #require(signedIn.data["accessToken"].string)
            #expect(try await client.call(.get, "auth/me", token: accessToken).status == 200)
            #expect(signedIn.data["refreshToken"].string != nil)
            let events = try await api.database.query(
                "SELECT count(*)::int AS n FROM login_events WHERE user_id = $1 AND kind = 'signin'", [account.id])
            #expect(try events[0].decode("n", as: Int.self) == 2)  // the registration, then the link

            let again = try await client.call(.post, "auth/magic-link/verify", json: ["token": token])
            #expect(again.status == 401 && again.errorCode == "MAGIC_LINK_INVALID", "\(again.text)")
            worker.stop()
            try await task.value
        }
    }

    /// An unknown email gets the same answer and no mail; an expired link is refused.
    @Test func unknownEmailsLookTheSameAndExpiredLinksAreRefused() async throws {
        let sink = try SMTPSink.start()
        defer { sink.stop() }
        try await TestAPI.run(environment: Self.environment(sink)) { api, client in
            let account = try await api.register(client)
            let unknown = try await client.call(
                .post, "auth/magic-link/request", json: ["email": "nobody-\(UUID().uuidString.prefix(6))@example.com"])
            let known = try await client.call(.post, "auth/magic-link/request", json: ["email": account.email])
            #expect(unknown.status == 200 && known.status == 200)
            #expect(unknown.data["message"].string == known.data["message"].string && unknown.data["sent"].bool == known.data["sent"].bool)
            #expect(try await api.queue.stats().first { $0.queue == "mail" }?.queued == 1)

            let expired = "ml_expired-\(UUID().uuidString)"
            try await api.database.execute(
                "INSERT INTO magic_links (token_hash, user_id, expires_at) VALUES (sha256($1::text::bytea), $2, now() - interval '1 second')",
                [expired, account.id])
            let refused = try await client.call(.post, "auth/magic-link/verify", json: ["token": expired])
            #expect(refused.status == 401 && refused.errorCode == "MAGIC_LINK_INVALID")
            let malformed = try await client.call(.post, "auth/magic-link/request", json: ["email": "not an address"])
            #expect(malformed.status == 400 && malformed.errorCode == "VALIDATION_ERROR")
        }
    }

    @Test func requestsAreLimitedPerEmailAndPerAddress() async throws {
        let sink = try SMTPSink.start()
        defer { sink.stop() }
        var environment = Self.environment(sink)
        environment["MAGIC_LINK_MAX_PER_IP"] = "5"
        try await TestAPI.run(environment: environment, live: true) { api, client in
            let account = try await api.register(client)
            for _ in 0..<3 {
                #expect(try await client.call(.post, "auth/magic-link/request", json: ["email": account.email]).status == 200)
            }
            let limited = try await client.call(.post, "auth/magic-link/request", json: ["email": account.email])
            #expect(limited.status == 429 && limited.errorCode == "RATE_LIMITED", "\(limited.text)")
            #expect(Int(limited.headers[.retryAfter] ?? "") ?? 0 >= 1)
            // Other emails from the same address: the address's limit (5 a minute) ends them too.
            var statuses: [Int] = []
            for index in 0..<3 {
                statuses.append(
                    try await client.call(.post, "auth/magic-link/request", json: ["email": "other\(index)@example.com"]).status)
            }
            #expect(statuses == [200, 429, 429], "\(statuses)")
        }
    }

    @Test func withoutAMailServerTheRequestSaysSo() async throws {
        try await TestAPI.run { api, client in
            let response = try await client.call(.post, "auth/magic-link/request", json: ["email": "a@example.com"])
            #expect(response.status == 503 && response.errorCode == "CONFIGURATION_ERROR", "\(response.text)")
        }
    }
}
