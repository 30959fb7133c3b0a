/// Why an account operation was refused. The API maps each case to the seed's status and code.
package enum AccountError: Error, Equatable, Sendable {
    /// Wrong email or password: deliberately not saying which.
    case invalidCredentials
    case emailTaken
    case invalidInput(field: String, message: String)
    case appleNotConfigured
    case invalidIdentityToken(TokenError)
    case invalidRefreshToken(reason: String)
    case userNotFound
    /// A sign-in link that is unknown, expired or already used.
    case invalidMagicLink
}
