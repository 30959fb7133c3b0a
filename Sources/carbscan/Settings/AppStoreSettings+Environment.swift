import AppStore
import Foundation
import Settings

extension AppStoreSettings {
    /// Nil when `APPSTORE_BUNDLE_ID` is unset. `APPSTORE_ENVIRONMENTS` (`Production` by default; `Production,Sandbox` to
    /// take TestFlight and development purchases too), `APPSTORE_PRODUCT_TIERS` (`product=tier,…`),
    /// `APPSTORE_ROOT_CERTIFICATES` (a PEM file of the roots to pin; Apple Root CA - G3 when unset, only tests set it).
    package init?(environment: EnvironmentReader) throws(SettingError) {
        guard let bundleID = environment.text("APPSTORE_BUNDLE_ID") else { return nil }
        let listed = environment.list("APPSTORE_ENVIRONMENTS")
        let environments = Set(listed.isEmpty ? ["Production"] : listed)
        guard environments.isSubset(of: ["Production", "Sandbox"]) else {
            throw SettingError("APPSTORE_ENVIRONMENTS", "must name Production and/or Sandbox, not '\(listed.joined(separator: ","))'")
        }
        guard let products = AppStoreProducts.parse(environment.text("APPSTORE_PRODUCT_TIERS") ?? "") else {
            throw SettingError("APPSTORE_PRODUCT_TIERS", "must be product=tier pairs with paid tiers (essentials, pro)")
        }
        var roots: [String]?
        if let path = environment.text("APPSTORE_ROOT_CERTIFICATES") {
            guard let pem = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw SettingError("APPSTORE_ROOT_CERTIFICATES", "cannot read \(path)")
            }
            roots = pem.components(separatedBy: "-----END CERTIFICATE-----").compactMap { part in
                guard let start = part.range(of: "-----BEGIN CERTIFICATE-----") else { return nil }
                return String(part[start.lowerBound...]) + "-----END CERTIFICATE-----\n"
            }
        }
        let verifier: AppStoreVerifier
        do {
            verifier = try AppStoreVerifier(bundleID: bundleID, environments: environments, rootCertificates: roots)
        } catch {
            throw SettingError("APPSTORE_ROOT_CERTIFICATES", "not PEM certificates (\(error))")
        }
        self.init(verifier: verifier, products: products)
    }
}
