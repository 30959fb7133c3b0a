import Foundation
import Testing

@testable import Queue

/// SplitMix64: a tiny deterministic generator, so jitter tests are reproducible.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// An instant from an RFC 3339 string ("2026-03-08T07:00:00Z").
func instant(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> Date {
    let formatter = ISO8601DateFormatter()
    return try #require(formatter.date(from: text), "bad test date \(text)", sourceLocation: sourceLocation)
}

/// The instant as an RFC 3339 UTC string, so failures read as times.
func iso(_ date: Date?) -> String? {
    date.map { ISO8601DateFormatter().string(from: $0) }
}

func zone(_ identifier: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> TimeZone {
    try #require(TimeZone(identifier: identifier), sourceLocation: sourceLocation)
}

/// Parses `yaml` as the kind `name`, returning the error it must raise.
func loadError(_ yaml: String, name: String = "sample") -> ConfigError? {
    do {
        _ = try JobKindSpec(yaml: yaml, name: name, file: "jobs/\(name).yml")
        return nil
    } catch {
        return error
    }
}

/// The repository's jobs/ folder: …/Tests/QueueTests/Config/ThisFile.swift → ../../../jobs.
func repositoryJobsDirectory(filePath: String = #filePath) -> String {
    URL(fileURLWithPath: filePath)
        .deletingLastPathComponent()  // Config
        .deletingLastPathComponent()  // QueueTests
        .deletingLastPathComponent()  // Tests
        .deletingLastPathComponent()  // package root
        .appendingPathComponent("jobs").path
}
