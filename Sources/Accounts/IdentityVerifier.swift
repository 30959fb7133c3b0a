import Foundation
import JWTKit
import Logging
import OutboundHTTP

/// An OpenID Connect issuer whose RS256 identity tokens we accept: Apple, or an extra one such as Clerk.
package struct IdentityProvider: Sendable, Equatable {
    /// Our name for it: `apple`, or `oidc:<issuer>` for the extra ones (the `identities.provider` column).
    package var name: String
    package var issuer: String
    package var jwksURL: String
    /// Accepted `aud` values; empty accepts any (Clerk session tokens carry no `aud` by default).
    package var audiences: [String]

    package init(name: String, issuer: String, jwksURL: String, audiences: [String]) {
        self.name = name
        self.issuer = issuer
        self.jwksURL = jwksURL
        self.audiences = audiences
    }
}

/// What a verified identity token says about its user.
package struct VerifiedIdentity: Sendable, Equatable {
    package var provider: String
    package var subject: String
    package var email: String?
    package var emailVerified: Bool
}

struct IdentityClaims: JWTPayload {
    var iss: IssuerClaim
    var sub: SubjectClaim
    var aud: AudienceClaim?
    var exp: ExpirationClaim
    var email: String?
    // swift-format-ignore: AlwaysUseLowerCamelCase
    var email_verified: BoolClaim?

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// Verifies identity tokens against the issuer's JWKS, fetched over HTTP and cached. A token signed with a key
/// id we do not know triggers one refetch (key rotation), at most every `minimumRefetchInterval`, so a flood of
/// bad tokens cannot turn into a flood of requests to the issuer. RS256 only.
package actor IdentityVerifier {
    package let provider: IdentityProvider
    private let http: HTTPClient
    private let logger: Logger
    private let cacheLifetime: Duration
    private let minimumRefetchInterval: Duration
    private var keys: JWTKeyCollection?
    private var keyIDs: Set<String> = []
    private var fetchedAt: ContinuousClock.Instant?
    private var inFlight: Task<Void, any Error>?

    package init(
        provider: IdentityProvider, http: HTTPClient, logger: Logger, cacheLifetime: Duration = .seconds(3600),
        minimumRefetchInterval: Duration = .seconds(10)
    ) {
        self.provider = provider
        self.http = http
        self.logger = logger
        self.cacheLifetime = cacheLifetime
        self.minimumRefetchInterval = minimumRefetchInterval
    }

    package func verify(_ token: String, now: Date = Date()) async throws(TokenError) -> VerifiedIdentity {
        let header = try PeekedHeader(token: token)
        guard header.alg == "RS256" else { throw TokenError(.invalid, "identity token must be signed with RS256") }
        guard let kid = header.kid, !kid.isEmpty else { throw TokenError(.invalid, "identity token has no key id") }

        let clock = ContinuousClock()
        let stale = fetchedAt.map { clock.now - $0 > cacheLifetime } ?? true
        let mayRefetch = fetchedAt.map { clock.now - $0 > minimumRefetchInterval } ?? true
        if stale || (!keyIDs.contains(kid) && mayRefetch) {
            do {
                try await refresh()
            } catch {
                logger.warning("JWKS fetch failed", metadata: ["issuer": "\(provider.issuer)", "error": "\(error)"])
                if keys == nil { throw TokenError(.unavailable, "the identity provider's keys could not be fetched") }
            }
        }
        guard let keys, keyIDs.contains(kid) else { throw TokenError(.invalid, "identity token signed with an unknown key") }

        let claims: IdentityClaims
        do {
            claims = try await keys.verify(token, as: IdentityClaims.self)
        } catch {
            throw TokenError(.invalid, "identity token signature is invalid")
        }
        guard claims.iss.value == provider.issuer else { throw TokenError(.invalid, "identity token has the wrong issuer") }
        if !provider.audiences.isEmpty {
            guard let audience = claims.aud?.value, audience.contains(where: provider.audiences.contains) else {
                throw TokenError(.invalid, "identity token has the wrong audience")
            }
        }
        guard claims.exp.value > now else { throw TokenError(.expired, "identity token expired") }
        guard !claims.sub.value.isEmpty else { throw TokenError(.invalid, "identity token has no subject") }
        return VerifiedIdentity(
            provider: provider.name, subject: claims.sub.value, email: claims.email,
            emailVerified: claims.email_verified?.value ?? false)
    }

    /// One fetch at a time: concurrent verifications wait for the same request.
    private func refresh() async throws {
        if let inFlight { return try await inFlight.value }
        let task = Task { try await self.fetch() }
        inFlight = task
        defer { inFlight = nil }
        try await task.value
    }

    private func fetch() async throws {
        let response = try await http.send(
            HTTPRequest(url: provider.jwksURL, headers: [("Accept", "application/json")], provider: "identity"))
        guard response.status == 200 else {
            throw TokenError(.unavailable, "JWKS endpoint answered \(response.status)")
        }
        let jwks = try JSONDecoder().decode(JWKS.self, from: Data(response.body))
        let collection = JWTKeyCollection()
        var ids: Set<String> = []
        for jwk in jwks.keys where jwk.keyType == .rsa {
            guard let kid = jwk.keyIdentifier?.string else { continue }
            if let algorithm = jwk.algorithm, algorithm != .rs256 { continue }
            var key = jwk
            key.algorithm = .rs256
            _ = try await collection.add(jwk: key)
            ids.insert(kid)
        }
        keys = collection
        keyIDs = ids
        fetchedAt = ContinuousClock.now
        logger.info("JWKS fetched", metadata: ["issuer": "\(provider.issuer)", "keys": "\(ids.count)"])
    }
}
