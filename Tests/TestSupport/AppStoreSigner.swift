import Crypto
import Foundation
import JSON
import SwiftASN1
import X509

/// Signs App Store payloads the way Apple does (a compact ES256 JWS whose `x5c` header carries leaf, intermediate
/// and root), with a locally generated chain shaped like Apple's: a root, an intermediate with Apple's WWDR marker
/// extension, and a leaf with the App Store receipt-signing marker. Tests pin `rootPEM` instead of Apple Root CA - G3.
public struct AppStoreSigner: Sendable {
    public let rootPEM: String
    let chain: [[UInt8]]
    let leafKey: P256.Signing.PrivateKey

    /// - Parameters:
    ///   - leafValidity: when the leaf is valid (default: an hour ago to a year on); a past range makes it expired.
    ///   - markers: whether leaf and intermediate carry Apple's marker extensions (a developer certificate does not).
    public static func make(leafValidity: Range<Date>? = nil, markers: Bool = true) throws -> AppStoreSigner {
        let now = Date()
        let rootKey = P256.Signing.PrivateKey()
        let intermediateKey = P256.Signing.PrivateKey()
        let leafKey = P256.Signing.PrivateKey()
        let rootName = try DistinguishedName { CommonName("Test Root CA - G3") }
        let intermediateName = try DistinguishedName { CommonName("Test Worldwide Developer Relations CA - G6") }
        let leafName = try DistinguishedName { CommonName("Test Mac App Store and iTunes Store Receipt Signing") }
        let ca = try Certificate.Extensions {
            Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
            Critical(KeyUsage(keyCertSign: true, cRLSign: true))
        }
        let root = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(rootKey.publicKey), notValidBefore: now - 86_400,
            notValidAfter: now + 10 * 365 * 86_400, issuer: rootName, subject: rootName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: ca, issuerPrivateKey: .init(rootKey))
        var intermediateExtensions = Array(ca)
        var leafExtensions = Array(
            try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
            })
        if markers {
            // Apple's markers are extensions holding DER NULL.
            intermediateExtensions.append(.init(oid: [1, 2, 840, 113_635, 100, 6, 2, 1], critical: false, value: [0x05, 0x00]))
            leafExtensions.append(.init(oid: [1, 2, 840, 113_635, 100, 6, 11, 1], critical: false, value: [0x05, 0x00]))
        }
        let intermediate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(intermediateKey.publicKey), notValidBefore: now - 86_400,
            notValidAfter: now + 5 * 365 * 86_400, issuer: rootName, subject: intermediateName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions(intermediateExtensions), issuerPrivateKey: .init(rootKey))
        let validity = leafValidity ?? (now - 3600)..<(now + 365 * 86_400)
        let leaf = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(leafKey.publicKey), notValidBefore: validity.lowerBound,
            notValidAfter: validity.upperBound, issuer: intermediateName, subject: leafName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions(leafExtensions), issuerPrivateKey: .init(intermediateKey))
        func der(_ certificate: Certificate) throws -> [UInt8] {
            var serializer = DER.Serializer()
            try serializer.serialize(certificate)
            return serializer.serializedBytes
        }
        return AppStoreSigner(
            rootPEM: try root.serializeAsPEM().pemString, chain: [try der(leaf), try der(intermediate), try der(root)], leafKey: leafKey)
    }

    /// The compact JWS of `payload`, as Apple signs it.
    public func sign(_ payload: JSONValue) throws -> String {
        let header: JSONValue = ["alg": "ES256", "x5c": .array(chain.map { .string(Data($0).base64EncodedString()) })]
        let input = Self.base64URL(Array(header.jsonString.utf8)) + "." + Self.base64URL(Array(payload.jsonString.utf8))
        let signature = try leafKey.signature(for: Array(input.utf8)).rawRepresentation
        return input + "." + Self.base64URL(Array(signature))
    }

    /// A StoreKit 2 auto-renewable subscription transaction (`JWSTransactionDecodedPayload`), times in milliseconds.
    public static func transaction(
        originalTransactionID: String = "2000000123456789", productID: String = "com.carbscan.pro.monthly",
        bundleID: String = "com.carbscan.app", environment: String = "Production", expires: Date = Date() + 30 * 86_400,
        signed: Date = Date(), revoked: Date? = nil, appAccountToken: String? = nil
    ) -> JSONValue {
        func ms(_ date: Date) -> JSONValue { .int(Int(date.timeIntervalSince1970 * 1000)) }
        var fields: [String: JSONValue] = [
            "transactionId": .string("\(originalTransactionID)\(Int(signed.timeIntervalSince1970))"),
            "originalTransactionId": .string(originalTransactionID), "bundleId": .string(bundleID), "productId": .string(productID),
            "purchaseDate": ms(signed - 60), "originalPurchaseDate": ms(signed - 86_400), "expiresDate": ms(expires),
            "type": "Auto-Renewable Subscription", "inAppOwnershipType": "PURCHASED", "environment": .string(environment),
            "signedDate": ms(signed), "storefront": "USA", "transactionReason": "PURCHASE",
        ]
        if let revoked { fields["revocationDate"] = ms(revoked) }
        if let appAccountToken { fields["appAccountToken"] = .string(appAccountToken) }
        return .object(fields)
    }

    /// An App Store Server Notification V2 carrying `signedTransaction`.
    public static func notification(
        type: String, signedTransaction: String?, bundleID: String = "com.carbscan.app", environment: String = "Production",
        signed: Date = Date(), uuid: String = UUID().uuidString.lowercased()
    ) -> JSONValue {
        var data: [String: JSONValue] = ["bundleId": .string(bundleID), "environment": .string(environment), "appAppleId": 1_234_567_890]
        if let signedTransaction { data["signedTransactionInfo"] = .string(signedTransaction) }
        return [
            "notificationType": .string(type), "notificationUUID": .string(uuid), "data": .object(data),
            "signedDate": .int(Int(signed.timeIntervalSince1970 * 1000)), "version": "2.0",
        ]
    }

    static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
