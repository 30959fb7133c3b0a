// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "carbscan",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "carbscan", targets: ["carbscan"]),
        .library(name: "Queue", targets: ["Queue"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.0.0"),
    ],
    targets: [
        // C client libraries (Debian -dev packages), wrapped thinly.
        // hiredis is linked from the module map: Debian's hiredis.pc adds -D_FILE_OFFSET_BITS=64, which SwiftPM rejects.
        .systemLibrary(name: "CHiredis", path: "Sources/CHiredis"),
        .systemLibrary(name: "CLibpq", path: "Sources/CLibpq", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        .systemLibrary(name: "CCurl", path: "Sources/CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),

        .target(
            name: "Redis",
            dependencies: ["CHiredis", .product(name: "Logging", package: "swift-log")]
        ),
        .target(
            name: "Queue",
            dependencies: [
                "Redis",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Yams", package: "Yams"),
            ]
        ),
        .target(
            name: "Workers",
            dependencies: ["Queue", "Redis", .product(name: "Logging", package: "swift-log")]
        ),
        .executableTarget(
            name: "carbscan",
            dependencies: [
                "Queue", "Workers", "Redis",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(name: "RedisTests", dependencies: ["Redis"]),
        .testTarget(name: "QueueTests", dependencies: ["Queue", "Redis", "Workers"]),
        .testTarget(name: "SystemTests", dependencies: ["Queue", "Redis", "carbscan"]),
    ],
    swiftLanguageModes: [.v6]
)
