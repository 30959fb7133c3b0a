/// App Store settings: how signed payloads are verified (`APPSTORE_BUNDLE_ID`, `APPSTORE_ENVIRONMENTS`,
/// `APPSTORE_ROOT_CERTIFICATES`) and which tier a product buys (`APPSTORE_PRODUCT_TIERS`). The executable reads them;
/// without `APPSTORE_BUNDLE_ID` there are none and the App Store routes answer CONFIGURATION_ERROR.
package struct AppStoreSettings: Sendable {
    package var verifier: AppStoreVerifier
    package var products: AppStoreProducts

    package init(verifier: AppStoreVerifier, products: AppStoreProducts) {
        self.verifier = verifier
        self.products = products
    }
}
