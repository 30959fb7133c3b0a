import Foundation
import Postgres
import Testing

@Suite struct PostgresConfigurationTests {
    @Test func parsesEveryPartOfTheURL() throws {
        let configuration = try PostgresConfiguration(
            url: "postgresql://app%40x:p%40ss%3Aword@db.example:6543/carbs?sslmode=require&application_name=worker")
        #expect(configuration.username == "app@x")
        #expect(configuration.password == "p@ss:word")
        #expect(configuration.host == "db.example")
        #expect(configuration.port == 6543)
        #expect(configuration.database == "carbs")
        #expect(configuration.sslMode == "require")
        #expect(configuration.applicationName == "worker")
    }

    @Test func defaults() throws {
        let configuration = try PostgresConfiguration(url: "postgres://postgres@127.0.0.1/carbscan")
        #expect(configuration.port == 5432)
        #expect(configuration.password == nil)
        #expect(configuration.poolSize == 4)
        #expect(configuration.connectTimeout == .seconds(5))
        #expect(configuration.statementTimeout == .seconds(30))
        #expect(configuration.searchPath == nil)
        #expect(configuration.applicationName == "carbscan")
        #expect(configuration.pooler == nil)
    }

    @Test func thePoolerParameterNamesTransactionPooling() throws {
        let pooled = try PostgresConfiguration(url: "postgres://app@pgbouncer:6432/carbs?pooler=transaction")
        #expect(pooled.pooler == .transaction)
        #expect(pooled.description.hasSuffix("?application_name=carbscan&pooler=transaction"))
        #expect(try PostgresConfiguration(url: "postgres://app@db/carbs?pooler=none").pooler == nil)
        #expect {
            try PostgresConfiguration(url: "postgres://app@db/carbs?pooler=statement")
        } throws: { error in
            (error as? PostgresError)?.code == .invalidURL && "\(error)".contains("transaction or none")
        }
    }

    @Test(arguments: [
        "redis://127.0.0.1:6379/0",
        "not a url at all",
        "postgres://user@host:99999/db",
        "postgres://user@host/db?sslmode=sometimes",
        "postgres://user@host/db?pool=4",
        "postgres://user@host/db/extra",
    ])
    func rejectsInvalidURLs(url: String) {
        #expect {
            try PostgresConfiguration(url: url)
        } throws: { error in
            (error as? PostgresError)?.code == .invalidURL
        }
    }

    @Test func descriptionRedactsThePassword() throws {
        let configuration = try PostgresConfiguration(url: "postgres://carbscan:hunter2-secret@db:5432/carbscan")
        #expect(!configuration.description.contains("hunter2-secret"))
        #expect(configuration.description.contains("carbscan:***@db:5432/carbscan"))
        #expect(!"\(configuration)".contains("hunter2-secret"))
        #expect(!PostgresConfiguration.redacted("postgres://u:hunter2-secret@db/x").contains("hunter2-secret"))
        #expect(!PostgresConfiguration.redacted("postgres://u:hunter2-secret@db:notaport/x").contains("hunter2-secret"))
    }

    @Test func invalidURLErrorsDoNotEchoThePassword() {
        #expect {
            try PostgresConfiguration(url: "mysql://u:hunter2-secret@db/x")
        } throws: { error in
            !"\(error)".contains("hunter2-secret")
        }
    }
}
