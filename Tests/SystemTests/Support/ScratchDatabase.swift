import Foundation
import Postgres
import TestSupport

/// Creates an empty database, runs `body` with its URL, drops it (processes still connected are cut off).
func withScratchDatabase(_ body: (String) async throws -> Void) async throws {
    let name = "cli_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12).lowercased()
    var configuration = try PostgresConfiguration(url: TestServices.databaseURL)
    configuration.poolSize = 1
    // CREATE DATABASE waits while another one copies the template: no statement timeout here.
    configuration.statementTimeout = nil
    let admin = PostgresClient(configuration: configuration, logger: .init(label: "test"))
    defer { admin.shutdown() }
    try await admin.executeScript("CREATE DATABASE \(name)")
    let user = configuration.username.map { "\($0)@" } ?? ""
    let url = "postgres://\(user)\(configuration.host):\(configuration.port)/\(name)"
    do {
        try await body(url)
    } catch {
        try? await admin.executeScript("DROP DATABASE \(name) WITH (FORCE)")
        throw error
    }
    try await admin.executeScript("DROP DATABASE \(name) WITH (FORCE)")
}
