// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "carbscan",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "carbscan", targets: ["carbscan"]),
        .library(name: "Queue", targets: ["Queue", "JSON"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.0.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1", traits: []),
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.7.1"),
        // jwt-kit 5.7+ needs swift-crypto ≥ 4.1; the machine has 3.12.3 and 4.5.2.
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/vapor/multipart-kit", from: "4.7.1"),
        // App Store signed payloads: the x5c chain (jwt-kit's X5CVerifier is built on it).
        .package(url: "https://github.com/apple/swift-certificates", from: "1.15.0"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.3.0"),
        // The mobile API's generated Swift client, a package of its own for the iOS app (its identity is its folder's
        // name, "Swift"); the system test drives a live server through it over URLSession, as the app does.
        .package(path: "Clients/Swift"),
        // The system test reads a body the client hands it (HTTPBody), as an app does.
        .package(url: "https://github.com/apple/swift-openapi-runtime", from: "1.13.4"),
        // Only the tests' fault proxy uses it directly (Hummingbird already builds it).
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        // The operators' dashboard (/ops/): server-rendered pages.
        .package(url: "https://github.com/hummingbird-project/swift-mustache", from: "2.1.1"),
        // Prometheus metrics at GET /metrics (Sources/Telemetry).
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        // Tracing: the API of swift-distributed-tracing (Hummingbird's already); spans are recorded and exported as
        // OTLP here (Sources/Traces/Recording, Sources/TraceExport), swift-otel's cost per span measured too high.
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
    ],
    targets: [
        // C client libraries (Debian -dev packages), wrapped thinly.
        // hiredis is linked from the module map: Debian's hiredis.pc adds -D_FILE_OFFSET_BITS=64, which SwiftPM rejects.
        .systemLibrary(name: "CHiredis", path: "Sources/CHiredis"),
        .systemLibrary(name: "CLibpq", path: "Sources/CLibpq", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        .systemLibrary(name: "CCurl", path: "Sources/CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        // bcrypt through libxcrypt's crypt_r: <crypt.h> is not in Glibc's module.
        .systemLibrary(name: "CCrypt", path: "Sources/CCrypt", pkgConfig: "libxcrypt", providers: [.apt(["libcrypt-dev"])]),

        // Whether this process traces, which traces are sampled, a span's context as text (carried in a job's record)
        // and the tracer that records spans (swift-distributed-tracing's API) for the exporter.
        .target(name: "Traces", dependencies: [.product(name: "Tracing", package: "swift-distributed-tracing")]),
        .target(
            name: "Redis",
            dependencies: ["CHiredis", "Traces", .product(name: "Logging", package: "swift-log")]
        ),
        // JSON: a strict parser, Codable over parsed values both ways, RFC 3339 dates and the API's streaming encoder.
        .target(name: "JSON"),
        // Duration in milliseconds and seconds, for every part that hands a time to C or Redis.
        .target(name: "Durations"),
        // The one reader of environment variables; only the executable uses it (libraries take plain settings values).
        .target(name: "Settings"),
        .target(
            name: "Queue",
            dependencies: [
                "Redis", "JSON", "Durations", "Traces",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Yams", package: "Yams"),
            ],
            // The Lua scripts, compiled into the binary (nothing to install beside it).
            resources: [
                .embedInCode("Scripts/clock.lua"),
                .embedInCode("Scripts/helpers.lua"),
                .embedInCode("Scripts/lanes.lua"),
                .embedInCode("Scripts/lane-pass.lua"),
                .embedInCode("Scripts/enqueue.lua"),
                .embedInCode("Scripts/reserve.lua"),
                .embedInCode("Scripts/start.lua"),
                .embedInCode("Scripts/finish.lua"),
                .embedInCode("Scripts/promote.lua"),
                .embedInCode("Scripts/reclaim.lua"),
                .embedInCode("Scripts/retry-now.lua"),
                .embedInCode("Scripts/discard.lua"),
                .embedInCode("Scripts/cancel.lua"),
                .embedInCode("Scripts/lease-acquire.lua"),
                .embedInCode("Scripts/lease-release.lua"),
                .embedInCode("Scripts/global-limit.lua"),
            ]
        ),
        // Transactional enqueue: jobs written to Postgres with the rows that need them, then put on their Redis queues.
        .target(
            name: "Outbox",
            dependencies: ["Queue", "JSON", "Postgres", .product(name: "Logging", package: "swift-log")]
        ),
        // Read-your-writes with read replicas: each user's last write position, kept in Redis by the API and the
        // workers (docs/postgres.md).
        .target(name: "ReadYourWrites", dependencies: ["Redis", "Postgres", "Durations"]),
        // One type per job kind: its name, parameters and result, shared by the API (producer) and the workers,
        // generated at build time from the kinds' files (jobs/*.yml): the job file is the one place a kind is declared.
        .target(name: "JobContracts", dependencies: ["Queue", "JSON"], plugins: ["JobContractsPlugin"]),
        // Swift from the job files, for the two plugins below: each kind's contract, and the workers' list of handlers.
        .executableTarget(name: "JobCodegen", dependencies: [.product(name: "Yams", package: "Yams")]),
        .plugin(name: "JobContractsPlugin", capability: .buildTool(), dependencies: ["JobCodegen"]),
        .plugin(name: "JobHandlersPlugin", capability: .buildTool(), dependencies: ["JobCodegen"]),
        .target(
            name: "Postgres",
            dependencies: [
                "CLibpq", "Durations", "Traces", .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .target(
            name: "OutboundHTTP",
            dependencies: ["CCurl", "Durations", "Traces", .product(name: "Logging", package: "swift-log")]
        ),
        // The recorded spans sent to an OpenTelemetry collector: OTLP/HTTP, binary protobuf, over OutboundHTTP.
        .target(
            name: "TraceExport",
            dependencies: [
                "Traces", "OutboundHTTP", .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .target(
            name: "Mail",
            dependencies: ["CCurl"]
        ),
        // Push providers: APNs (HTTP/2, ES256 provider tokens) and FCM HTTP v1 (RS256 service-account OAuth), over OutboundHTTP.
        .target(
            name: "Push",
            dependencies: [
                "OutboundHTTP", "JSON", "Durations", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"), .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "Store",
            dependencies: ["Postgres", "JSON", .product(name: "Logging", package: "swift-log")],
            resources: [.copy("Migrations")]
        ),
        .target(
            name: "Accounts",
            dependencies: [
                "CCrypt", "Store", "Postgres", "OutboundHTTP", "Durations",
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "AppStore",
            dependencies: [
                "Store",
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            resources: [.copy("AppleRootCA-G3.pem")]
        ),
        // Prometheus metrics: the registry, job/HTTP/API observers, scrape-time queue gauges and the /metrics listener.
        .target(
            name: "Telemetry",
            dependencies: [
                "Queue", "Redis", "Postgres", "OutboundHTTP",
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .target(
            name: "API",
            dependencies: [
                "Accounts", "AppStore", "Store", "Postgres", "Queue", "Outbox", "JSON", "Durations", "JobContracts", "Redis", "OutboundHTTP",
                "ReadYourWrites",
                "Telemetry", "Traces",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "MultipartKit", package: "multipart-kit"),
                .product(name: "Mustache", package: "swift-mustache"),
            ],
            resources: [
                .copy("openapi.json"),
                // The dashboard's templates, style sheet and script, compiled into the binary.
                .embedInCode("Ops/Templates/layout-top.mustache"),
                .embedInCode("Ops/Templates/layout-bottom.mustache"),
                .embedInCode("Ops/Templates/login.mustache"),
                .embedInCode("Ops/Templates/overview.mustache"),
                .embedInCode("Ops/Templates/queue-table.mustache"),
                .embedInCode("Ops/Templates/queues.mustache"),
                .embedInCode("Ops/Templates/jobs.mustache"),
                .embedInCode("Ops/Templates/job.mustache"),
                .embedInCode("Ops/Templates/cron.mustache"),
                .embedInCode("Ops/Templates/message.mustache"),
                .embedInCode("Ops/Templates/processes.mustache"),
                .embedInCode("Ops/Templates/ops.css"),
                .embedInCode("Ops/Templates/ops.js"),
            ]
        ),
        .target(
            name: "Workers",
            dependencies: [
                "Queue", "Outbox", "JSON", "Durations", "JobContracts", "Redis", "Postgres", "Store", "OutboundHTTP", "AppStore", "Mail",
                "ReadYourWrites",
                "Push", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            // Registers every kind's handler (`Handlers+Kinds.swift`, from the files of jobs/).
            plugins: ["JobHandlersPlugin"]
        ),
        .executableTarget(
            name: "carbscan",
            dependencies: [
                "Queue", "JSON", "Durations", "Workers", "Redis", "Postgres", "Store", "Accounts", "API", "OutboundHTTP",
                "AppStore", "Mail", "Push", "Telemetry", "Outbox", "Settings", "Traces", "TraceExport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                // SIGHUP reloads a worker's queue limits.
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ]
        ),
        // ops/bench/slow-provider.sh's seeding of users, photos, reservations and jobs: a benchmark tool, not in the product.
        .executableTarget(
            name: "slow-provider",
            dependencies: [
                "Queue", "JSON", "JobContracts", "Redis", "Postgres",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "ops/bench/slow-provider"
        ),
        // The benchmarks' commands (ops/bench/*.sh): apart from `carbscan`, which ships only what operators run.
        .executableTarget(
            name: "carbscan-bench",
            dependencies: [
                "Queue", "JSON", "Durations", "Redis", "OutboundHTTP", "Postgres", "Store",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Benchmarks"
        ),
        .testTarget(name: "RedisTests", dependencies: ["Redis", "TestSupport"]),
        // The environment reader, and the executable's reading of each part's settings through it.
        .testTarget(
            name: "SettingsTests",
            dependencies: [
                "Settings", "carbscan", "API", "Traces", "TraceExport", "Accounts", "Workers", "Push", .product(name: "CryptoExtras", package: "swift-crypto"),
            ]
        ),
        .testTarget(name: "PostgresTests", dependencies: ["Postgres", "TestSupport"]),
        // Local stand-ins for providers outside the project (an OpenAI-compatible model), shared by test targets.
        .target(
            name: "TestSupport",
            dependencies: [
                "Queue", "Redis", "JSON", .product(name: "Hummingbird", package: "hummingbird"), .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"), .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            path: "Tests/TestSupport",
            exclude: ["smtp_sink.py", "apns_peer.py", "fcm_peer.py", "tls_peer.py", "otlp_receiver.py", "otlp_receiver_check.py"]
        ),
        .testTarget(
            name: "WorkersTests",
            dependencies: [
                "TestSupport", "Workers", "Queue", "Outbox", "JSON", "Redis", "Postgres", "Store", "OutboundHTTP", "Mail", "Push",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // The APNs client and its provider token against a local peer that answers as APNs does.
        .testTarget(
            name: "PushTests",
            dependencies: [
                "Push", "TestSupport", "JSON", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "OutboundHTTPTests",
            dependencies: [
                "OutboundHTTP", .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            exclude: ["Support/h2_peer.py"]
        ),
        .testTarget(
            name: "APITests",
            dependencies: [
                "API", "Accounts", "AppStore", "Mail", "Store", "Postgres", "Queue", "Outbox", "JSON", "Redis", "Workers", "Push", "TestSupport",
                "ReadYourWrites",
                // The API is built from its settings as `carbscan serve` reads them (TestAPI's `environment:`).
                "Settings", "carbscan",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ]
        ),
        .testTarget(
            name: "QueueTests",
            dependencies: [
                "Queue", "JSON", "JobContracts", "Redis", "Workers", "TestSupport", .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "TelemetryTests",
            dependencies: [
                "Telemetry", "Queue", "JSON", "Redis", "Postgres", "OutboundHTTP", "Workers", "TestSupport", "Traces", "TraceExport",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
            ]
        ),
        .testTarget(
            name: "SystemTests",
            dependencies: [
                "Queue", "JSON", "Redis", "Postgres", "TestSupport", "carbscan",
                .product(name: "CarbScanClient", package: "Swift"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
