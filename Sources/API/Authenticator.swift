import Accounts
import Foundation
import HTTPTypes
import Hummingbird
import Store

/// Who is calling: one of our access tokens, or a token of an extra OIDC issuer (e.g. Clerk).
struct Caller: Sendable {
    var user: User
    /// The sign-in of our own access token; nil for an extra issuer's token.
    var sessionID: UUID?
}

/// Reads `Authorization: Bearer …`. Missing or bad tokens are 401 `UNAUTHORIZED`; an expired one is 401
/// `TOKEN_EXPIRED`, so the app knows to call `auth/refresh` (seed 000: refresh on 401).
struct Authenticator: Sendable {
    let accounts: AccountService

    static func bearer(_ request: Request) -> String? {
        guard let header = request.headers[.authorization] else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let token = parts[1].trimmingCharacters(in: .whitespaces)
        return token.isEmpty ? nil : token
    }

    /// The caller, who must have an account.
    func caller(_ request: Request) async throws -> Caller {
        switch try await identify(request) {
        case .account(let caller): return caller
        case .unlinked: throw APIError(.notFound, "NOT_FOUND", "User not found: create the account with POST /users/me first")
        }
    }

    enum Identity {
        case account(Caller)
        /// A valid extra-issuer token whose identity has no account yet.
        case unlinked(VerifiedIdentity)
    }

    func identify(_ request: Request) async throws -> Identity {
        guard let token = Self.bearer(request) else { throw APIError.unauthorized }
        do {
            if let identity = try await accounts.verifyExternal(token) {
                guard let user = try await accounts.linkedUser(for: identity) else { return .unlinked(identity) }
                return .account(Caller(user: user, sessionID: nil))
            }
            let (user, session) = try await accounts.authenticate(accessToken: token)
            return .account(Caller(user: user, sessionID: session))
        } catch AccountError.invalidIdentityToken(let error) {
            throw Self.refusal(error)
        }
    }

    static func refusal(_ error: TokenError) -> APIError {
        switch error.code {
        case .expired: APIError(.unauthorized, "TOKEN_EXPIRED", "Access token expired: refresh it with POST /auth/refresh")
        case .invalid: APIError(.unauthorized, "UNAUTHORIZED", "Missing or invalid authentication")
        case .unavailable: APIError(.serviceUnavailable, "AUTH_PROVIDER_UNAVAILABLE", "The identity provider cannot be reached; try again")
        }
    }
}
