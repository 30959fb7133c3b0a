import Foundation
import Postgres
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `carbscan migrate` and `carbscan serve` as operators run them, on a database of their own.
@Suite struct ServeTests {
    @Test func concurrentMigratorsApplyEachMigrationOnce() async throws {
        try await withScratchDatabase { url in
            let results = try await withThrowingTaskGroup(of: (Int32, String).self) { group in
                for _ in 0..<3 {
                    group.addTask {
                        let result = try await CarbScanBinary.run(["migrate"], environment: ["DATABASE_URL": url])
                        return (result.status, result.stdout)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(results.allSatisfy { $0.0 == 0 })
            // Exactly one starter applied the migrations; the others found nothing to do.
            #expect(results.filter { $0.1.contains("applied") }.count == 1)
            #expect(results.filter { $0.1.contains("nothing to apply") }.count == 2)
            let status = try await CarbScanBinary.run(["migrate", "--status"], environment: ["DATABASE_URL": url])
            let lines = status.stdout.split(separator: "\n")
            #expect(lines.count >= 2)
            #expect(lines.allSatisfy { !$0.hasSuffix("pending") })
        }
    }

    @Test func productionRefusesToStartWithoutJWTSecret() async throws {
        let result = try await CarbScanBinary.run(
            ["serve", "--port", String(CarbScanBinary.freePort())], environment: ["CARBSCAN_ENV": "production", "JWT_SECRET": ""])
        #expect(result.status == 78)
        #expect(result.stderr.contains("JWT_SECRET"))
        let short = try await CarbScanBinary.run(
            ["serve", "--port", String(CarbScanBinary.freePort())], environment: ["JWT_SECRET": "too short"])
        #expect(short.status == 78)
        #expect(short.stderr.contains("at least 32 bytes"))
    }

    @Test func serveMigratesAnswersHealthAndStopsOnSIGTERM() async throws {
        try await withScratchDatabase { url in
            let port = CarbScanBinary.freePort()
            let server = try CarbScanBinary.start(
                ["serve", "--port", String(port), "--migrate"],
                environment: ["DATABASE_URL": url, "JWT_SECRET": String(repeating: "s", count: 40)])
            var health: (Int, String)?
            for _ in 0..<300 where health == nil {
                try await Task.sleep(for: .milliseconds(50))
                guard
                    let (data, response) = try? await URLSession.shared.data(
                        from: URL(string: "http://127.0.0.1:\(port)/api/mobile/v1/health")!)
                else { continue }
                health = ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
            }
            let answer = try #require(health, "no answer; log: \(server.output)")
            #expect(answer.0 == 200)
            #expect(answer.1.contains(#""status":"healthy""#))
            // Idle, it exits well under a second (its event subscriber used to hold it 4–6 s).
            let signalled = ContinuousClock.now
            server.signal(SIGTERM)
            #expect(await server.waitForExit(timeout: .seconds(10)) == 0)
            #expect(ContinuousClock.now - signalled < .seconds(1), "exit took \(ContinuousClock.now - signalled)")
            #expect(!server.output.contains(#""level":"error""#), "\(server.output)")
        }
    }
}
