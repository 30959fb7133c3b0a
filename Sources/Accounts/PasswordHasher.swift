import CCrypt
import Dispatch
import Foundation

/// bcrypt through libxcrypt's `crypt_r` (`$2b$`; verifies the `$2a$`/`$2b$`/`$2y$` hashes bcryptjs wrote).
/// Hashing costs tens of milliseconds of CPU, so it runs on Dispatch's global queue, never on Swift's
/// cooperative pool, where it would stall every request on its core.
package struct PasswordHasher: Sendable {
    /// bcrypt's work factor: 2^cost rounds. 10 takes 50–80 ms on this project's 2-core machine.
    package var cost: Int

    package init(cost: Int = 10) {
        self.cost = cost
    }

    /// bcrypt reads at most 72 bytes; longer passwords would be silently truncated, so they are refused.
    package static let maxPasswordBytes = 72

    package func hash(_ password: String) async throws -> String {
        let cost = self.cost
        return try await Self.offPool {
            var settingBuffer = [CChar](repeating: 0, count: Int(CRYPT_GENSALT_OUTPUT_SIZE))
            // A nil random-bytes argument makes libxcrypt draw the salt from the OS's generator.
            guard crypt_gensalt_rn("$2b$", UInt(cost), nil, 0, &settingBuffer, Int32(settingBuffer.count)) != nil else {
                throw PasswordHashError("crypt_gensalt_rn failed (errno \(errno))")
            }
            let setting = String(decoding: settingBuffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            return try Self.crypt(password, setting: setting)
        }
    }

    /// Whether `password` matches `storedHash`; the comparison takes the same time wherever they differ.
    package func verify(_ password: String, against storedHash: String) async -> Bool {
        guard storedHash.hasPrefix("$2a$") || storedHash.hasPrefix("$2b$") || storedHash.hasPrefix("$2y$") else { return false }
        let computed = try? await Self.offPool { try Self.crypt(password, setting: storedHash) }
        guard let computed else { return false }
        return constantTimeEquals(Array(computed.utf8), Array(storedHash.utf8))
    }

    /// Spends the time a verification would, for unknown accounts: a login for an unknown email takes as
    /// long as one with a wrong password, so timing does not tell which part was wrong.
    package func burnVerification() async {
        _ = await verify("not the password", against: Self.decoyHash)
    }

    private static let decoyHash = "$2b$10$CwTycUXWue0Thq9StjUM0uGAPS7UozKic8WKZt.EuyeNqkR/GXSUO"

    private static func crypt(_ password: String, setting: String) throws -> String {
        // struct crypt_data is ~32 KB: heap-allocated and zeroed, as crypt_r requires.
        let data = UnsafeMutablePointer<crypt_data>.allocate(capacity: 1)
        defer { data.deallocate() }
        memset(data, 0, MemoryLayout<crypt_data>.size)
        guard let result = crypt_r(password, setting, data) else {
            throw PasswordHashError("crypt_r failed (errno \(errno))")
        }
        let text = String(cString: result)
        // libxcrypt signals failure with a hash starting with '*'.
        guard !text.hasPrefix("*") else { throw PasswordHashError("crypt_r refused the setting") }
        return text
    }

    private static func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global(qos: .userInitiated).async {
                continuation.resume(with: Result { try work() })
            }
        }
    }
}

package struct PasswordHashError: Error, CustomStringConvertible {
    package let description: String
    init(_ description: String) { self.description = description }
}

/// Compares two byte strings in time that depends only on their lengths.
package func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count else { return false }
    var difference: UInt8 = 0
    for index in a.indices { difference |= a[index] ^ b[index] }
    return difference == 0
}
