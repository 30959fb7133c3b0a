import Crypto
import Foundation

/// The operators' dashboard credentials (`OPS_USER`, `OPS_PASSWORD`), and what is derived from them: the key that
/// signs dashboard sessions and CSRF tokens. Changing either variable ends every session.
package struct OpsCredentials: Sendable {
    package let user: String
    private let passwordDigest: SHA256.Digest
    private let userDigest: SHA256.Digest
    /// Signs session cookies and CSRF tokens; known only to processes that know the password.
    let signingKey: SymmetricKey

    /// A shorter `OPS_PASSWORD` is refused at start-up.
    package static let minimumPasswordLength = 12

    package init(user: String, password: String) {
        self.user = user
        passwordDigest = SHA256.hash(data: Array(password.utf8))
        userDigest = SHA256.hash(data: Array(user.utf8))
        signingKey = SymmetricKey(data: SHA256.hash(data: Array("carbscan-ops-session\u{0}\(user)\u{0}\(password)".utf8)))
    }

    /// Compares digests of fixed length byte by byte without stopping early, so the time taken says nothing about
    /// how much of either value was right.
    func matches(user: String, password: String) -> Bool {
        let userOK = Self.constantTimeEqual(SHA256.hash(data: Array(user.utf8)), userDigest)
        let passwordOK = Self.constantTimeEqual(SHA256.hash(data: Array(password.utf8)), passwordDigest)
        return userOK && passwordOK
    }

    static func constantTimeEqual<A: Sequence<UInt8>, B: Sequence<UInt8>>(_ a: A, _ b: B) -> Bool {
        let left = Array(a)
        let right = Array(b)
        guard left.count == right.count else { return false }
        var difference: UInt8 = 0
        for index in left.indices { difference |= left[index] ^ right[index] }
        return difference == 0
    }

    /// HMAC-SHA256 of `message` under the signing key, as lowercase hex.
    func sign(_ message: String) -> String {
        HMAC<SHA256>.authenticationCode(for: Array(message.utf8), using: signingKey).map { String(format: "%02x", $0) }.joined()
    }
}
