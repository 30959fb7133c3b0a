import Foundation
import Logging
import Postgres
import TestSupport

/// The Postgres the ops scripts started (`DATABASE_URL`), switched to its `carbscan_test` database.
enum TestDatabase {
    static let url: String = {
        let base = TestServices.databaseURL
        var components = URLComponents(string: base)!
        components.path = "/carbscan_test"
        return components.string!
    }()

    static let logger: Logger = {
        var logger = Logger(label: "postgres-tests")
        logger.logLevel = .warning
        return logger
    }()

    static func configuration(poolSize: Int = 2) throws -> PostgresConfiguration {
        var configuration = try PostgresConfiguration(url: url)
        configuration.poolSize = poolSize
        return configuration
    }

    /// A schema name no other test uses (also used as the clients' `application_name`, to find their backends).
    static func uniqueName(_ prefix: String = "pgtest") -> String {
        "\(prefix)_\(UUID().uuidString.prefix(12).lowercased().replacing("-", with: ""))"
    }

    /// Runs `body` with a client whose connections use a fresh schema (`searchPath`), then drops the schema.
    /// - Parameters:
    ///   - poolSize, statementTimeout: the client's settings.
    ///   - body: gets the client and the schema.
    @discardableResult
    static func withSchema<T>(
        isolation: isolated (any Actor)? = #isolation,
        poolSize: Int = 2,
        statementTimeout: Duration? = .seconds(30),
        _ body: (PostgresClient, TestSchema) async throws -> T
    ) async throws -> T {
        let schema = TestSchema(name: uniqueName())
        let admin = PostgresClient(configuration: try configuration(poolSize: 1), logger: logger)
        defer { admin.shutdown() }
        try await admin.executeScript("CREATE SCHEMA \(schema.name)")
        let client = PostgresClient(
            configuration: try schema.configuration(poolSize: poolSize, statementTimeout: statementTimeout), logger: logger)
        do {
            let value = try await body(client, schema)
            client.shutdown()
            try await admin.executeScript("DROP SCHEMA \(schema.name) CASCADE")
            return value
        } catch {
            client.shutdown()
            try? await admin.executeScript("DROP SCHEMA \(schema.name) CASCADE")
            throw error
        }
    }

    /// Runs `body` with a client on the bare test database (no schema of its own), shut down afterwards.
    @discardableResult
    static func withAdmin<T>(isolation: isolated (any Actor)? = #isolation, _ body: (PostgresClient) async throws -> T) async throws -> T {
        let admin = PostgresClient(configuration: try configuration(poolSize: 1), logger: logger)
        defer { admin.shutdown() }
        return try await body(admin)
    }
}

/// A test's own schema; every client made from it uses the schema and an `application_name` equal to its name.
struct TestSchema: Sendable {
    let name: String

    func configuration(poolSize: Int = 2, statementTimeout: Duration? = .seconds(30)) throws -> PostgresConfiguration {
        var configuration = try TestDatabase.configuration(poolSize: poolSize)
        configuration.searchPath = name
        configuration.applicationName = name
        configuration.statementTimeout = statementTimeout
        return configuration
    }

    /// Another client on the same schema (a second process, as far as the server can tell).
    func client(poolSize: Int = 2) throws -> PostgresClient {
        PostgresClient(configuration: try configuration(poolSize: poolSize), logger: TestDatabase.logger)
    }
}
