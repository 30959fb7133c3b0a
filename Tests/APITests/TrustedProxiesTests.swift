import API
import HTTPTypes
import Testing
import carbscan

/// `TRUSTED_PROXIES`: behind a proxy every user has an address of their own again, and nobody else can choose one.
@Suite struct TrustedProxiesTests {
    static func headers(_ pairs: [(String, String)]) -> HTTPFields {
        var fields = HTTPFields()
        for (name, value) in pairs { fields.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
        return fields
    }

    @Test func theClientIsTheRightMostAddressNoTrustedProxyWrote() throws {
        let proxies = try #require(TrustedProxies(parsing: "10.0.0.0/8, 127.0.0.1, fd00::/8"))
        let xff = { (value: String) in Self.headers([("X-Forwarded-For", value)]) }
        // An untrusted peer is its own client, whatever it claims.
        #expect(proxies.client(peer: "198.51.100.7", headers: xff("203.0.113.1")) == "198.51.100.7")
        // A trusted peer: the address it received from.
        #expect(proxies.client(peer: "10.1.2.3", headers: xff("203.0.113.1")) == "203.0.113.1")
        // What the client wrote itself, left of the first untrusted hop, is worth nothing.
        #expect(proxies.client(peer: "10.1.2.3", headers: xff("6.6.6.6, 203.0.113.1, 10.9.9.9")) == "203.0.113.1")
        // Several header lines are one list, in order.
        let lines = Self.headers([("X-Forwarded-For", "6.6.6.6"), ("X-Forwarded-For", "203.0.113.9")])
        #expect(proxies.client(peer: "127.0.0.1", headers: lines) == "203.0.113.9")
        // Every hop trusted: the left-most; no header: the peer.
        #expect(proxies.client(peer: "10.1.2.3", headers: xff("10.0.0.1, 10.0.0.2")) == "10.0.0.1")
        #expect(proxies.client(peer: "10.1.2.3", headers: [:]) == "10.1.2.3")
        // A hop that is no address ends the walk at the proxy that wrote it.
        #expect(proxies.client(peer: "10.1.2.3", headers: xff("203.0.113.1, unknown, 10.0.0.4")) == "10.0.0.4")
        // IPv4-mapped peers match IPv4 blocks; IPv6 clients are named canonically.
        #expect(proxies.client(peer: "::ffff:127.0.0.1", headers: xff("2001:DB8::0:1")) == "2001:db8::1")
        // RFC 7239 Forwarded, with quotes, brackets and ports, wins over X-Forwarded-For.
        let forwarded = Self.headers([
            ("Forwarded", #"for=6.6.6.6, for="[2001:db8:cafe::17]:4711";proto=https, for="10.0.0.8:3333""#),
            ("X-Forwarded-For", "192.0.2.1"),
        ])
        #expect(proxies.client(peer: "fd00::1", headers: forwarded) == "2001:db8:cafe::17")
        // None configured: the peer, always.
        #expect(TrustedProxies().client(peer: "10.1.2.3", headers: xff("203.0.113.1")) == "10.1.2.3")
    }

    @Test func malformedSettingsStopStartUp() throws {
        for bad in ["10.0.0.0/33", "not-an-ip", "10.0.0.0/8;10.1.0.0/16", "::1/129", "10.0.0/8", "10.0.0.0/-1"] {
            #expect(throws: (any Error).self, "\(bad)") { try APISettings(environment: ["TRUSTED_PROXIES": bad]) }
        }
        let settings = try APISettings(environment: ["TRUSTED_PROXIES": " 10.0.0.0/8 , ::1 "])
        #expect(settings.trustedProxies.blocks.map(\.description) == ["10.0.0.0/8", "::1/128"])
    }

    @Test func behindATrustedProxyEachUserHasTheirOwnLoginBudget() async throws {
        let environment = ["TRUSTED_PROXIES": "127.0.0.0/8", "LOGIN_MAX_ATTEMPTS_PER_IP": "2"]
        try await TestAPI.run(environment: environment, live: true) { api, client in
            let account = try await api.register(client, email: "proxied@example.com", password: "right password")
            let login = ["email": "proxied@example.com", "password": "right password"]
            func attempt(from address: String) async throws -> Int {
                try await client.call(.post, "auth/login", json: login, headers: Self.headers([("X-Forwarded-For", address)])).status
            }
            #expect(try await attempt(from: "203.0.113.1") == 200)
            #expect(try await attempt(from: "203.0.113.1") == 200)
            #expect(try await attempt(from: "203.0.113.1") == 429)
            // Another user behind the same proxy is not throttled by the first.
            #expect(try await attempt(from: "203.0.113.2") == 200)
            // And the login events name each user's own address.
            let events = try await api.database.query(
                "SELECT DISTINCT ip FROM login_events WHERE user_id = $1 AND ip IS NOT NULL ORDER BY 1", [account.id])
            #expect(try events.map { try $0.decode("ip", as: String.self) }.contains("203.0.113.2"))
        }
    }

    @Test func withoutTrustedProxiesAForwardedHeaderCannotEscapeTheLimit() async throws {
        try await TestAPI.run(environment: ["LOGIN_MAX_ATTEMPTS_PER_IP": "2"], live: true) { api, client in
            _ = try await api.register(client, email: "spoof@example.com", password: "right password")
            let login = ["email": "spoof@example.com", "password": "right password"]
            var statuses: [Int] = []
            for n in 1...3 {
                let headers = Self.headers([("X-Forwarded-For", "203.0.113.\(n)"), ("Forwarded", "for=198.51.100.\(n)")])
                statuses.append(try await client.call(.post, "auth/login", json: login, headers: headers).status)
            }
            #expect(statuses == [200, 200, 429])
        }
    }
}
