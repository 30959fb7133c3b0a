/// Why a signed App Store payload was refused. `code` is what a client or operator can act on.
package struct AppStoreError: Error, CustomStringConvertible, Sendable, Equatable {
    package enum Code: String, Sendable {
        /// The JWS is malformed, its chain does not lead to the pinned root, a certificate expired, or the signature
        /// does not match.
        case invalidSignature
        /// Signed by Apple, but for another app or another environment than this server accepts.
        case wrongApp
        /// A product id that `APPSTORE_PRODUCT_TIERS` maps to no tier.
        case unknownProduct
    }

    package let code: Code
    package let message: String

    package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    package var description: String { message }
}
