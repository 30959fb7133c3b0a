import CryptoExtras
import Foundation
import JWTKit
import Synchronization

/// RSA signing keys of a fake identity provider (Apple, Clerk): publishes them as a JWKS and signs identity
/// tokens with them, including the malformed and malicious ones the API must refuse.
final class IdentityKeys: Sendable {
    struct Key: Sendable {
        var kid: String
        var privateKey: JWTKit.Insecure.RSA.PrivateKey
    }

    private let state: Mutex<[Key]>

    /// Generating a 2048-bit key takes a noticeable part of a second: tests share four, made once. Each role
    /// (first key, rotated key, unpublished key…) has its own, so no two roles ever share a key.
    private static let pool: [JWTKit.Insecure.RSA.PrivateKey] = (0..<4).map { _ in
        try! JWTKit.Insecure.RSA.PrivateKey(backing: _RSA.Signing.PrivateKey(keySize: .bits2048))
    }

    init(kids: [String] = ["key-1"], poolOffset: Int = 0) throws {
        state = Mutex(kids.enumerated().map { Key(kid: $1, privateKey: Self.pool[(poolOffset + $0) % 2]) })
    }

    static func generate() throws -> JWTKit.Insecure.RSA.PrivateKey { pool[3] }

    /// Adds a key (rotation); tokens signed with it verify only after the API refetches the JWKS.
    func add(kid: String) throws -> Key {
        let key = Key(kid: kid, privateKey: Self.pool[2])
        state.withLock { $0.append(key) }
        return key
    }

    var keys: [Key] { state.withLock { $0 } }

    /// The JWKS document (RFC 7517) of the public halves.
    func jwksJSON() throws -> Data {
        let entries = try keys.map { key -> [String: String] in
            let (modulus, exponent) = try key.privateKey.publicKey.getKeyPrimitives()
            return ["kty": "RSA", "kid": key.kid, "use": "sig", "alg": "RS256", "n": base64URL(modulus), "e": base64URL(exponent)]
        }
        return try JSONSerialization.data(withJSONObject: ["keys": entries], options: [.sortedKeys])
    }

    func sign(_ claims: TestIdentityClaims, kid: String? = nil) async throws -> String {
        let key = kid.flatMap { kid in keys.first { $0.kid == kid } } ?? keys[0]
        let collection = JWTKeyCollection()
        await collection.add(rsa: key.privateKey, digestAlgorithm: .sha256, kid: JWKIdentifier(string: key.kid))
        return try await collection.sign(claims, kid: JWKIdentifier(string: key.kid))
    }

    /// Signs with an RSA key the provider does not publish, under a key id it does not know.
    func signWithUnknownKey(_ claims: TestIdentityClaims) async throws -> String {
        let collection = JWTKeyCollection()
        await collection.add(rsa: try Self.generate(), digestAlgorithm: .sha256, kid: "not-published")
        return try await collection.sign(claims, kid: "not-published")
    }

    /// The algorithm-confusion attack: HS256 keyed with the provider's public key PEM, under a real key id.
    func signHS256WithPublicKey(_ claims: TestIdentityClaims) async throws -> String {
        let key = keys[0]
        let collection = JWTKeyCollection()
        await collection.add(
            hmac: HMACKey(from: key.privateKey.publicKey.pemRepresentation), digestAlgorithm: .sha256, kid: JWKIdentifier(string: key.kid))
        return try await collection.sign(claims, kid: JWKIdentifier(string: key.kid))
    }

    /// `alg: none`, no signature.
    func unsigned(_ claims: TestIdentityClaims) throws -> String {
        let header = try JSONSerialization.data(withJSONObject: ["alg": "none", "typ": "JWT", "kid": keys[0].kid])
        let payload = try JSONEncoder().encode(claims)
        return base64URL(header) + "." + base64URL(payload) + "."
    }
}

func base64URL(_ data: Data) -> String {
    data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        .replacingOccurrences(of: "=", with: "")
}

/// Claims as Apple and Clerk put them in identity tokens.
struct TestIdentityClaims: JWTPayload, Codable {
    var iss: IssuerClaim
    var sub: SubjectClaim
    var aud: AudienceClaim
    var iat: IssuedAtClaim
    var exp: ExpirationClaim
    var email: String?
    // swift-format-ignore: AlwaysUseLowerCamelCase
    var email_verified: Bool?

    func verify(using algorithm: some JWTAlgorithm) async throws {}

    static func apple(
        sub: String = "001234.\(UUID().uuidString.prefix(8)).0101", email: String? = nil, aud: String = TestAPI.appleClientID,
        iss: String = TestAPI.appleIssuer, expiresIn: TimeInterval = 600
    ) -> TestIdentityClaims {
        TestIdentityClaims(
            iss: .init(value: iss), sub: .init(value: sub), aud: .init(value: [aud]), iat: .init(value: Date()),
            exp: .init(value: Date().addingTimeInterval(expiresIn)), email: email, email_verified: email == nil ? nil : true)
    }
}
