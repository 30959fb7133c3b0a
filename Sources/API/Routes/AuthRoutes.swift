import Accounts
import Foundation
import Hummingbird
import JSON
import Store

/// `auth/*`: Sign in with Apple, email and password, token refresh and revocation, the current user.
struct AuthRoutes {
    let accounts: AccountService
    let authenticator: Authenticator
    let throttle: LoginThrottle
    let recorder: LoginRecorder

    struct AuthResult: Encodable {
        var accessToken: String
        var refreshToken: String
        var user: UserDTO
    }

    func register(on api: RouteTable) {
        api.post("auth/apple", signInWithApple)
        api.post("auth/register", registerAccount)
        api.post("auth/login", login)
        api.post("auth/refresh", refresh)
        api.post("auth/revoke", revoke)
        api.get("auth/me") { request, _ in try Envelope.success(UserDTO(try await authenticator.caller(request).user)) }
    }

    struct AppleBody: Decodable, NullableMembers {
        static let nullableMembers: Set = ["user", "deviceId"]
        struct Name: Decodable, NullableMembers {
            static let nullableMembers: Set = ["email", "firstName", "lastName"]
            var email: String?
            var firstName: String?
            var lastName: String?
        }
        var identityToken: String
        var authorizationCode: String
        var user: Name?
        var deviceId: String?
    }

    func signInWithApple(_ request: Request, _ context: APIContext) async throws -> Response {
        let body = try await JSONBody.decode(AppleBody.self, from: request)
        let token = try Field.text(body.identityToken, "identityToken", max: 16_384, required: true)!
        _ = try Field.text(body.authorizationCode, "authorizationCode", max: 4096, required: true)
        let name = ProvidedName(
            email: try Field.text(body.user?.email, "user.email", max: 320),
            firstName: try Field.text(body.user?.firstName, "user.firstName", max: 100),
            lastName: try Field.text(body.user?.lastName, "user.lastName", max: 100))
        let deviceID = try Field.text(body.deviceId, "deviceId", max: 200)
        do {
            let (session, event) = try await accounts.signInWithApple(identityToken: token, name: name, deviceID: deviceID)
            await recorder.record(event, kind: .signin, ip: context.remoteIP)
            return try Envelope.success(AuthResult(session))
        } catch AccountError.appleNotConfigured {
            throw APIError(.serviceUnavailable, "CONFIGURATION_ERROR", "Apple Sign In is not configured on this server")
        } catch AccountError.invalidIdentityToken(let error) {
            if error.code == .unavailable { throw Authenticator.refusal(error) }
            throw APIError(.unauthorized, "INVALID_TOKEN", "Apple Sign In token verification failed")
        }
    }

    struct RegisterBody: Decodable, NullableMembers {
        static let nullableMembers: Set = ["name", "firstName", "lastName", "deviceId"]
        var email: String
        var password: String
        var name: String?
        var firstName: String?
        var lastName: String?
        var deviceId: String?
    }

    func registerAccount(_ request: Request, _ context: APIContext) async throws -> Response {
        let body = try await JSONBody.decode(RegisterBody.self, from: request)
        var firstName = try Field.text(body.firstName, "firstName", max: 100)
        var lastName = try Field.text(body.lastName, "lastName", max: 100)
        if firstName == nil, lastName == nil, let name = try Field.text(body.name, "name", max: 200) {
            let parts = name.split(separator: " ", maxSplits: 1)
            firstName = parts.first.map(String.init)
            lastName = parts.count > 1 ? String(parts[1]) : nil
        }
        let deviceID = try Field.text(body.deviceId, "deviceId", max: 200)
        do {
            let (session, event) = try await accounts.register(
                email: body.email, password: body.password, firstName: firstName, lastName: lastName, deviceID: deviceID)
            await recorder.record(event, kind: .signin, ip: context.remoteIP)
            return try Envelope.success(AuthResult(session), status: .created)
        } catch AccountError.invalidInput(let field, let message) {
            throw APIError.validation(field, message)
        } catch AccountError.emailTaken {
            // 400, as seed 004 (US-002) says and seed 001's status set allows: an app built to them branches on it.
            throw APIError(
                .badRequest, "EMAIL_ALREADY_REGISTERED", "An account with this email already exists", details: ["field": "email"])
        }
    }

    struct LoginBody: Decodable, NullableMembers {
        static let nullableMembers: Set = ["deviceId"]
        var email: String
        var password: String
        var deviceId: String?
    }

    func login(_ request: Request, _ context: APIContext) async throws -> Response {
        let body = try await JSONBody.decode(LoginBody.self, from: request)
        let deviceID = try Field.text(body.deviceId, "deviceId", max: 200)
        try await throttle.admit(email: body.email, ip: context.remoteIP)
        do {
            let (session, event) = try await accounts.login(email: body.email, password: body.password, deviceID: deviceID)
            try await throttle.recordSuccess(email: body.email)
            await recorder.record(event, kind: .signin, ip: context.remoteIP)
            return try Envelope.success(AuthResult(session))
        } catch AccountError.invalidCredentials {
            try await throttle.recordFailure(email: body.email)
            throw APIError(.unauthorized, "INVALID_CREDENTIALS", "Email or password is incorrect")
        }
    }

    struct RefreshBody: Decodable { var refreshToken: String }

    struct RefreshResult: Encodable {
        var accessToken: String
        var refreshToken: String
    }

    func refresh(_ request: Request, _ context: APIContext) async throws -> Response {
        let body = try await JSONBody.decode(RefreshBody.self, from: request)
        let token = try Field.text(body.refreshToken, "refreshToken", max: 512, required: true)!
        do {
            let session = try await accounts.refresh(token)
            RequestWriter.note(session.user.id)
            return try Envelope.success(RefreshResult(accessToken: session.accessToken, refreshToken: session.refreshToken))
        } catch AccountError.invalidRefreshToken(let reason) {
            throw APIError(.unauthorized, "INVALID_REFRESH_TOKEN", "Refresh token is not valid: \(reason). Sign in again.")
        } catch AccountError.userNotFound {
            throw APIError(
                .unauthorized, "INVALID_REFRESH_TOKEN", "Refresh token is not valid: the account no longer exists. Sign in again.")
        }
    }

    struct RevokeBody: Decodable, NullableMembers {
        static let nullableMembers: Set = ["refreshToken"]
        var refreshToken: String?
    }

    /// Revokes the sign-in of the refresh token, else of the bearer access token. Always `{revoked: true}`:
    /// it does not tell whether a token existed.
    func revoke(_ request: Request, _ context: APIContext) async throws -> Response {
        let body = try await JSONBody.decode(RevokeBody.self, from: request, emptyIsObject: true)
        var userID: String?
        if let token = try Field.text(body.refreshToken, "refreshToken", max: 512) {
            userID = try await accounts.revoke(refreshToken: token)
        } else if Authenticator.bearer(request) != nil {
            let caller = try await authenticator.principal(request)
            if let session = caller.sessionID { try await accounts.revoke(sessionID: session) }
            userID = caller.userID
        } else {
            throw APIError.validation("refreshToken", "send the refresh token, or the access token as a Bearer header")
        }
        let users = Users(accounts.database)
        if let userID, let user = try await users.find(id: userID) {
            let name = [user.firstName, user.lastName].compactMap { $0 }.joined(separator: " ")
            let identity = try await users.latestIdentity(userID: userID)
            let provider = identity.map { $0.provider == "password" ? "email" : $0.provider } ?? "carbscan"
            let event = SignInEvent(
                userID: user.id, provider: provider, subject: identity?.subject ?? user.id, email: user.email,
                displayName: name.isEmpty ? nil : name)
            await recorder.record(event, kind: .signout, ip: context.remoteIP)
        }
        return try Envelope.success(["revoked": true])
    }
}

extension AuthRoutes.AuthResult {
    init(_ session: Session) {
        self.init(accessToken: session.accessToken, refreshToken: session.refreshToken, user: UserDTO(session.user))
    }
}
