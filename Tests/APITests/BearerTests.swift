import Testing

@testable import API

/// `Authorization: Bearer <token>`: the scheme in any case, blanks around the token ignored, anything else no token.
@Suite struct BearerTests {
    @Test(arguments: [
        ("Bearer abc.def", "abc.def"), ("bearer abc", "abc"), ("BEARER \t abc \t", "abc"), ("Bearer\tabc", "abc"),
        ("bEaReR a b", "a b"),
    ])
    func readsTheToken(header: String, token: String) {
        #expect(Authenticator.bearer(in: header) == token)
    }

    @Test(arguments: ["Bearer", "Bearer ", "Bearer \t ", "Bearerabc", "Basic abc", "Bear abc", "abc.def.ghi", "", "Bearer\u{A0}abc"])
    func refusesWhatIsNoBearerToken(header: String) {
        #expect(Authenticator.bearer(in: header) == nil)
    }
}
