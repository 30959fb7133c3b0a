import Foundation
import Redis
import TestSupport
import Testing

@testable import Queue

/// The Redis contract as files: the Lua scripts run alone through `ops/redis-script.sh` exactly as the engine runs
/// them, and they write no field of a job's record that `JobField` does not name.
@Suite struct ScriptContractTests {
    static let root = TestServices.repositoryRoot
    static let scriptNames =
        ["enqueue", "reserve", "start", "finish", "promote", "reclaim", "retry-now", "discard"]
        + ["lease-acquire", "lease-release"]

    /// Every `.lua` file of the folder is embedded (a new file not listed in Package.swift would be missing at run time).
    @Test func everyScriptFileIsEmbedded() throws {
        let folder = Self.root.appendingPathComponent("Sources/Queue/Scripts")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".lua") }
        #expect(Set(files) == Set(Scripts.files.keys))
        for file in files {
            #expect(Scripts.files[file] == Array(try Data(contentsOf: folder.appendingPathComponent(file))), "\(file)")
        }
    }

    /// The ops script expands includes as the engine does, and a script it runs alone acts on Redis as the engine's.
    @Test(arguments: scriptNames) func aScriptRunsAloneAsTheEngineRunsIt(name: String) throws {
        let printed = try Self.opsScript(["--print", name])
        #expect(printed.status == 0)
        #expect(printed.output == Scripts.source(of: "\(name).lua"))
    }

    @Test func redisCliRunsAScriptAlone() async throws {
        let env = try TestEnvironment()
        defer { Task { await env.cleanUp() } }
        let id = try await env.enqueue(options: EnqueueOptions(delay: .seconds(60)))
        let keys = env.queue.keys("default")
        let moved = try Self.opsScript(["retry-now", keys.stream, keys.scheduled, keys.retry, keys.dead, ",", keys.base, id.rawValue])
        #expect(moved.status == 0 && moved.output == "scheduled\n", "\(moved.output)")
        #expect(try await env.redis.send(["XLEN", keys.stream]).int == 1)
    }

    /// Field names written to a record (`HSET`, `HINCRBY`, `HDEL`) or read from it (`HGET`, `HMGET`) on a job key, and
    /// the enqueue script's field list: each is a `JobField`, and each `JobField` is used by some script or producer.
    @Test func scriptsUseOnlyTheRecordsFieldNames() throws {
        let lua = Scripts.files.values.map { String(decoding: $0, as: UTF8.self) }.joined(separator: "\n")
        let fieldNames = Set(JobField.allCases.map(\.rawValue))
        var used: Set<String> = []
        let call = /redis\.call\('(HSET|HGET|HMGET|HDEL|HINCRBY)', key, ([\s\S]*?)\)\n/
        let fieldsTable = /fields\[#fields \+ 1\] = '([A-Za-z]+)'|local fields = \{([^}]*)\}/
        for match in lua.matches(of: call) {
            let arguments = match.output.2.split(separator: ",").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
            // HSET: name, value, name, value…; HINCRBY: name, by; the others: names.
            let names =
                ["HSET", "HINCRBY"].contains(match.output.1) ? stride(from: 0, to: arguments.count, by: 2).map { arguments[$0] } : arguments
            for name in names where name.hasPrefix("'") {
                let field = String(name.dropFirst().prefix { $0 != "'" })
                #expect(fieldNames.contains(field), "\(match.output.1) of '\(field)', which JobField does not name")
                used.insert(field)
            }
        }
        for match in lua.matches(of: fieldsTable) {
            let names =
                match.output.1.map { [String($0)] }
                ?? (match.output.2.map { String($0) }?.split(separator: ",").enumerated().filter { $0.offset % 2 == 0 }
                    .map { $0.element.trimmingCharacters(in: .whitespaces).trimmingCharacters(in: ["'"]) } ?? [])
            for field in names {
                #expect(fieldNames.contains(field), "the enqueue script writes '\(field)', which JobField does not name")
                used.insert(field)
            }
        }
        #expect(used.count > 15, "the patterns found only \(used.sorted())")
        // `id` only names a job in a stream entry, written by the producers.
        #expect(fieldNames.subtracting(used) == ["id"], "named but never used by a script: \(fieldNames.subtracting(used).sorted())")
    }

    static func opsScript(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [root.appendingPathComponent("ops/redis-script.sh").path] + arguments
        var environment = ProcessInfo.processInfo.environment
        environment["REDIS_URL"] = TestServices.redisURL
        process.environment = environment
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("redis-script-\(UUID().uuidString)")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: output) }
        let handle = try FileHandle(forWritingTo: output)
        process.standardOutput = handle
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        try handle.close()
        return (process.terminationStatus, try String(contentsOf: output, encoding: .utf8))
    }
}
