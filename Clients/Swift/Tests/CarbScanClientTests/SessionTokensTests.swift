import CarbScanClient
import Foundation
import Testing

@Suite struct SessionTokensTests {
    static func jwt(_ claims: String) -> String {
        let payload = Data(claims.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        return "eyJhbGciOiJIUzI1NiJ9.\(payload).c2lnbmF0dXJl"
    }

    /// The expiry that decides a refresh ahead of time comes from the access token's `exp` (base64url, unpadded).
    @Test func theAccessTokensExpiryIsItsExpClaim() {
        let tokens = SessionTokens(accessToken: Self.jwt(#"{"sub":"u?>","exp":1763553600,"sid":"s"}"#), refreshToken: "rt_1")
        #expect(tokens.accessTokenExpiry == Date(timeIntervalSince1970: 1_763_553_600))
        #expect(SessionTokens(accessToken: "opaque", refreshToken: "rt_1").accessTokenExpiry == nil)
        #expect(SessionTokens(accessToken: Self.jwt(#"{"sub":"u"}"#), refreshToken: "rt_1").accessTokenExpiry == nil)
    }
}
