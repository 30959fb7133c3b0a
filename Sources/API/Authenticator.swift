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

/// Who calls, without their account: the user id and, for our own tokens, the sign-in.
struct Principal: Sendable {
    var userID: String
    var sessionID: UUID?
}

/// Reads `Authorization: Bearer …`. Missing or bad tokens are 401 `UNAUTHORIZED`; an expired one is 401
/// `TOKEN_EXPIRED`, so the app knows to call `auth/refresh` (seed 000: refresh on 401).
struct Authenticator: Sendable {
    let accounts: AccountService

    /// The token of `Authorization: Bearer <token>` (scheme case-insensitive, surrounding blanks ignored). Read
    /// byte by byte in the header's contiguous UTF-8: it runs on every authenticated request, and through
    /// `String.UTF8View`'s slices the same steps cost a microsecond per request (perf, 2026-11-28).
    static func bearer(_ request: Request) -> String? {
        request.headers.value(.authorization).flatMap(bearer(in:))
    }

    /// `bearer`'s reading of an `Authorization` header's value.
    static func bearer(in header: String) -> String? {
        var header = header
        return header.withUTF8 { bytes -> String? in
            let scheme = "bearer".utf8
            func blank(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
            guard bytes.count > scheme.count, zip(bytes, scheme).allSatisfy({ $0 | 0x20 == $1 }), blank(bytes[scheme.count])
            else { return nil }
            var start = scheme.count
            while start < bytes.count, blank(bytes[start]) { start += 1 }
            var end = bytes.count
            while end > start, blank(bytes[end - 1]) { end -= 1 }
            return start < end ? String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self) : nil
        }
    }

    /// The caller, who must have an account, as the database has it now.
    func caller(_ request: Request) async throws -> Caller {
        switch try await identify(request) {
        case .account(let caller): return caller
        case .unlinked: throw Self.unlinked
        }
    }

    enum Identity {
        case account(Caller)
        /// A valid extra-issuer token whose identity has no account yet.
        case unlinked(VerifiedIdentity)
    }

    func identify(_ request: Request) async throws -> Identity {
        try await resolve(request) { identity in
            guard let user = try await accounts.linkedUser(for: identity) else { return .unlinked(identity) }
            RequestWriter.note(user.id)
            return .account(Caller(user: user, sessionID: nil))
        } own: { token in
            let (user, session) = try await accounts.authenticate(accessToken: token)
            RequestWriter.note(user.id)
            return .account(Caller(user: user, sessionID: session))
        }
    }

    /// Who calls, for routes that need nothing of the account but its id: a token verified moments ago
    /// (`SessionCache`) costs no database read.
    func principal(_ request: Request) async throws -> Principal {
        try await resolve(request) { identity in
            guard let user = try await accounts.linkedUser(for: identity) else { throw Self.unlinked }
            RequestWriter.note(user.id)
            return Principal(userID: user.id, sessionID: nil)
        } own: { token in
            let (userID, session) = try await accounts.principal(accessToken: token)
            RequestWriter.note(userID)
            return Principal(userID: userID, sessionID: session)
        }
    }

    /// Reads the bearer token and resolves it: an extra issuer's token through `external`, one of ours through
    /// `own`; a refused token becomes the 401 (or 503) the app can act on.
    private func resolve<Resolved>(
        _ request: Request, external: (VerifiedIdentity) async throws -> Resolved, own: (String) async throws -> Resolved
    ) async throws -> Resolved {
        guard let token = Self.bearer(request) else { throw APIError.unauthorized }
        do {
            if let identity = try await accounts.verifyExternal(token) { return try await external(identity) }
            return try await own(token)
        } catch AccountError.invalidIdentityToken(let error) {
            throw Self.refusal(error)
        }
    }

    /// For a route that read the account itself and found it gone, or the sign-in revoked: the 401 a full check gives,
    /// and the session cache no longer vouches for that sign-in.
    func signedOut(_ principal: Principal) -> APIError {
        if let session = principal.sessionID { accounts.sessionEnded(session) }
        return Self.invalidToken
    }

    static var unlinked: APIError {
        APIError(.notFound, "NOT_FOUND", "User not found: create the account with POST /users/me first")
    }

    static let invalidToken = APIError(.unauthorized, "UNAUTHORIZED", "Missing or invalid authentication")

    static func refusal(_ error: TokenError) -> APIError {
        switch error.code {
        case .expired: APIError(.unauthorized, "TOKEN_EXPIRED", "Access token expired: refresh it with POST /auth/refresh")
        case .invalid: invalidToken
        case .unavailable: APIError(.serviceUnavailable, "AUTH_PROVIDER_UNAVAILABLE", "The identity provider cannot be reached; try again")
        }
    }
}
