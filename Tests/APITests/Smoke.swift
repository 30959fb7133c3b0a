import Testing

@Suite struct SmokeTests {
    @Test func registerAndMe() async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            let me = try await client.call(.get, "auth/me", token: account.accessToken)
            #expect(me.status == 200)
            #expect(me.data["email"].string == account.email)
        }
    }
}
