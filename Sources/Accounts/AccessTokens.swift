import Durations
import Foundation
import JWTKit

/// The claims of CarbScan's own access tokens.
package struct AccessClaims: JWTPayload, Sendable {
    package var sub: SubjectClaim
    package var iss: IssuerClaim
    package var aud: AudienceClaim
    package var iat: IssuedAtClaim
    package var exp: ExpirationClaim
    /// The sign-in (refresh-token family) this token belongs to: revoking the sign-in revokes its access tokens.
    package var sid: String
    package var email: String?

    /// Signature, issuer and audience are checked by `AccessTokens.verify`; expiry after the signature,
    /// so "expired" is only ever said of a token we really issued.
    package func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// Issues and verifies access tokens: HS256 with `JWT_SECRET`, in a key collection that holds nothing else, so
/// no other algorithm (`none`, RS256 with a public key used as an HMAC secret…) can verify.
package struct AccessTokens: Sendable {
    package static let issuer = "carbscan"
    package static let audience = "carbscan-mobile"
    private let keys: JWTKeyCollection
    package let lifetime: Duration

    package init(secret: [UInt8], lifetime: Duration) async {
        keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
        self.lifetime = lifetime
    }

    package func issue(userID: String, sessionID: UUID, email: String?, now date: Date = Date()) async throws -> String {
        // Whole seconds: NumericDate may carry fractions, but many JWT libraries read only integers.
        let now = Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.down))
        let claims = AccessClaims(
            sub: .init(value: userID), iss: .init(value: Self.issuer), aud: .init(value: [Self.audience]),
            iat: .init(value: now), exp: .init(value: now.addingTimeInterval(lifetime.timeInterval)),
            sid: sessionID.uuidString.lowercased(), email: email)
        return try await keys.sign(claims)
    }

    package func verify(_ token: String, now: Date = Date()) async throws(TokenError) -> AccessClaims {
        let header = try PeekedHeader(token: token)
        guard header.alg == "HS256" else { throw TokenError(.invalid, "unexpected token algorithm") }
        let claims: AccessClaims
        do {
            claims = try await keys.verify(token, as: AccessClaims.self)
        } catch {
            throw TokenError(.invalid, "token signature or format is invalid")
        }
        guard claims.iss.value == Self.issuer, claims.aud.value.contains(Self.audience) else {
            throw TokenError(.invalid, "token was not issued for this API")
        }
        guard claims.exp.value > now else { throw TokenError(.expired, "access token expired") }
        guard UUID(uuidString: claims.sid) != nil else { throw TokenError(.invalid, "token has no session") }
        return claims
    }
}
