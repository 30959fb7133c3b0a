import Foundation

/// App Store settings, from the environment: `APPSTORE_BUNDLE_ID` (unset: App Store routes answer
/// CONFIGURATION_ERROR), `APPSTORE_ENVIRONMENTS` (`Production` by default; `Production,Sandbox` to take TestFlight
/// and development purchases too), `APPSTORE_PRODUCT_TIERS` (`product=tier,…`), `APPSTORE_ROOT_CERTIFICATES` (a PEM
/// file of the roots to pin; Apple Root CA - G3 when unset, only tests set it).
package struct AppStoreConfiguration: Sendable {
    package var verifier: AppStoreVerifier
    package var products: AppStoreProducts

    package init(verifier: AppStoreVerifier, products: AppStoreProducts) {
        self.verifier = verifier
        self.products = products
    }

    /// Nil when `APPSTORE_BUNDLE_ID` is unset; a setting that cannot be right is refused with its name.
    package static func fromEnvironment(_ environment: [String: String]) throws -> AppStoreConfiguration? {
        func value(_ name: String) -> String? {
            guard let text = environment[name]?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
            return text
        }
        guard let bundleID = value("APPSTORE_BUNDLE_ID") else { return nil }
        let environments = Set(
            (value("APPSTORE_ENVIRONMENTS") ?? "Production").split(separator: ",").map {
                $0.trimmingCharacters(in: .whitespaces)
            })
        guard !environments.isEmpty, environments.isSubset(of: ["Production", "Sandbox"]) else {
            throw AppStoreError(.notConfigured, "APPSTORE_ENVIRONMENTS must name Production and/or Sandbox")
        }
        guard let products = AppStoreProducts.parse(value("APPSTORE_PRODUCT_TIERS") ?? "") else {
            throw AppStoreError(.notConfigured, "APPSTORE_PRODUCT_TIERS must be product=tier pairs with paid tiers (essentials, pro)")
        }
        var roots: [String]?
        if let path = value("APPSTORE_ROOT_CERTIFICATES") {
            guard let pem = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw AppStoreError(.notConfigured, "APPSTORE_ROOT_CERTIFICATES: cannot read \(path)")
            }
            roots = pem.components(separatedBy: "-----END CERTIFICATE-----").compactMap { part in
                guard let start = part.range(of: "-----BEGIN CERTIFICATE-----") else { return nil }
                return String(part[start.lowerBound...]) + "-----END CERTIFICATE-----\n"
            }
        }
        do {
            return AppStoreConfiguration(
                verifier: try AppStoreVerifier(bundleID: bundleID, environments: environments, rootCertificates: roots), products: products)
        } catch {
            throw AppStoreError(.notConfigured, "APPSTORE_ROOT_CERTIFICATES: not PEM certificates (\(error))")
        }
    }
}
