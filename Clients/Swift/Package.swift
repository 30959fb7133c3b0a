// swift-tools-version:6.1
import PackageDescription

// The CarbScan mobile API's Swift client, for the iOS app: generated at build time from the document the server
// serves (`Sources/CarbScanClient/openapi.json` links to the server's `Sources/API/openapi.json`). It depends on the
// OpenAPI runtime and its URLSession transport only, never on the server's packages.
let package = Package(
    name: "CarbScanClient",
    platforms: [.iOS(.v16), .macOS(.v13)],
    products: [
        .library(name: "CarbScanClient", targets: ["CarbScanClient"])
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-openapi-generator", from: "1.14.3"),
        .package(url: "https://github.com/apple/swift-openapi-runtime", from: "1.13.4"),
        .package(url: "https://github.com/apple/swift-openapi-urlsession", from: "1.4.0"),
        // Already a dependency of both; named because the middleware spells HTTPRequest and HTTPResponse.
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
    ],
    targets: [
        .target(
            name: "CarbScanClient",
            dependencies: [
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "OpenAPIURLSession", package: "swift-openapi-urlsession"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            plugins: [.plugin(name: "OpenAPIGenerator", package: "swift-openapi-generator")]
        ),
        .testTarget(
            name: "CarbScanClientTests",
            dependencies: ["CarbScanClient", .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
