import Foundation
import JWTKit
import SwiftASN1
import X509

/// Verifies what Apple signs for the App Store (StoreKit 2 transactions, App Store Server Notifications V2): a
/// compact JWS (ES256) whose `x5c` header carries the signing chain. The chain must lead to a pinned root (Apple
/// Root CA - G3 unless configured otherwise), every certificate must be valid now, the leaf must be Apple's App
/// Store receipt-signing certificate and the intermediate Apple's WWDR intermediate (their marker extensions, as
/// Apple's own server library checks: any Apple developer certificate also chains to G3), and the signature must
/// match the leaf's key. Then the payload must name this app (`bundleId`) and an accepted environment.
///
/// Built on jwt-kit's `X5CVerifier` (swift-certificates for the chain, swift-crypto for the signature).
package struct AppStoreVerifier: Sendable {
    /// Apple's marker extensions: the App Store receipt-signing leaf, and the WWDR intermediate that issues it.
    static let receiptSigningOID: ASN1ObjectIdentifier = [1, 2, 840, 113_635, 100, 6, 11, 1]
    static let intermediateOID: ASN1ObjectIdentifier = [1, 2, 840, 113_635, 100, 6, 2, 1]

    package let bundleID: String
    /// `Production`, `Sandbox`, or both (TestFlight and development builds buy in the sandbox).
    package let environments: Set<String>
    private let verifier: X5CVerifier

    /// - Parameters:
    ///   - rootCertificates: PEM roots to pin; nil pins Apple Root CA - G3 (shipped with this module).
    package init(bundleID: String, environments: Set<String>, rootCertificates: [String]? = nil) throws {
        self.bundleID = bundleID
        self.environments = environments
        self.verifier = try X5CVerifier(rootCertificates: rootCertificates ?? [Self.appleRootG3])
    }

    /// Apple Root CA - G3 (public; SHA-256 fingerprint 63:34:3A:BF:B8:9A:6A:03:EB:B5:7E:9B:3F:5F:A7:BE:7C:4F:5C:75:6F:30:
    /// 17:B3:A8:C4:88:C3:65:3E:91:79, from https://www.apple.com/certificateauthority/).
    package static let appleRootG3: String = {
        guard let url = Bundle.module.url(forResource: "AppleRootCA-G3", withExtension: "pem"),
            let pem = try? String(contentsOf: url, encoding: .utf8)
        else { fatalError("AppleRootCA-G3.pem is missing from the AppStore module's resources") }
        return pem
    }()

    /// A signed transaction, checked for this app and environment.
    package func transaction(_ jws: String) async throws(AppStoreError) -> AppStoreTransaction {
        let transaction = try await verified(jws, as: AppStoreTransaction.self)
        try check(bundleID: transaction.bundleId, environment: transaction.environment)
        return transaction
    }

    /// A signed notification and the transaction inside it (a `TEST` notification has none), both checked.
    package func notification(_ jws: String) async throws(AppStoreError) -> (AppStoreNotification, AppStoreTransaction?) {
        let notification = try await verified(jws, as: AppStoreNotification.self)
        try check(bundleID: notification.data?.bundleId ?? "", environment: notification.data?.environment ?? "")
        guard let signed = notification.data?.signedTransactionInfo else { return (notification, nil) }
        return (notification, try await transaction(signed))
    }

    private func check(bundleID: String, environment: String) throws(AppStoreError) {
        guard bundleID == self.bundleID else {
            throw AppStoreError(.wrongApp, "signed for another app ('\(bundleID.prefix(100))', not '\(self.bundleID)')")
        }
        guard environments.contains(environment) else {
            throw AppStoreError(
                .wrongApp,
                "signed in the '\(environment.prefix(20))' environment; accepted: \(environments.sorted().joined(separator: ", "))")
        }
    }

    private func verified<Payload: JWTPayload>(_ jws: String, as type: Payload.Type) async throws(AppStoreError) -> Payload {
        guard jws.utf8.count <= 64 * 1024, jws.split(separator: ".", omittingEmptySubsequences: false).count == 3 else {
            throw AppStoreError(.invalidSignature, "not a compact JWS")
        }
        do {
            return try await verifier.verifyJWS(Array(jws.utf8), as: Payload.self, jsonDecoder: JSONDecoder(), validationTime: .currentTime)
            {
                AppleMarkerPolicy()
            }
        } catch {
            let reason = Self.expiredCertificate(in: jws) ?? Self.reason(error)
            throw AppStoreError(.invalidSignature, "the App Store signature does not verify: \(reason)")
        }
    }

    /// The chain check reports an expired certificate only as "no valid chain": name it, for the operator.
    private static func expiredCertificate(in jws: String) -> String? {
        guard let encoded = jws.split(separator: ".").first, let header = Data(base64URL: String(encoded)),
            let object = try? JSONSerialization.jsonObject(with: header) as? [String: Any], let x5c = object["x5c"] as? [String]
        else { return nil }
        let now = Date()
        for (index, text) in x5c.enumerated() {
            guard let der = Data(base64Encoded: text), let certificate = try? Certificate(derEncoded: Array(der)) else { continue }
            if certificate.notValidAfter < now || certificate.notValidBefore > now {
                return "\(["the leaf", "the intermediate", "the root"][min(index, 2)]) certificate has expired or is not yet valid"
            }
        }
        return nil
    }

    /// A short reason, without echoing the token.
    private static func reason(_ error: any Error) -> String {
        let text = String(describing: error)
        if text.contains("expired") || text.contains("notValidAfter") || text.contains("not valid after") {
            return "a certificate has expired"
        }
        if text.contains("couldNotValidate") || text.contains("invalidX5CChain") {
            return "the certificate chain does not lead to the pinned root"
        }
        if text.contains("signatureVerifictionFailed") || text.contains("signatureVerificationFailed") {
            return "the signature does not match"
        }
        return String(text.prefix(200))
    }
}

extension Data {
    /// base64url without padding (JWS), or nil.
    init?(base64URL text: String) {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        self.init(base64Encoded: base64)
    }
}

/// The leaf must carry Apple's App Store receipt-signing marker and the intermediate Apple's WWDR marker.
struct AppleMarkerPolicy: VerifierPolicy {
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = []

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) async -> PolicyEvaluationResult {
        guard chain.count >= 3 else { return .failsToMeetPolicy(.init("the chain is not leaf, intermediate and root")) }
        guard chain[0].extensions.contains(where: { $0.oid == AppStoreVerifier.receiptSigningOID }) else {
            return .failsToMeetPolicy(.init("the leaf is not an App Store receipt-signing certificate"))
        }
        guard chain[1].extensions.contains(where: { $0.oid == AppStoreVerifier.intermediateOID }) else {
            return .failsToMeetPolicy(.init("the intermediate is not Apple's WWDR intermediate"))
        }
        return .meetsPolicy
    }
}
