import Foundation
import Queue
import Testing

@testable import Telemetry

/// How each delivery's end is counted, and kinds outside the catalog kept bounded.
@Suite struct JobMetricsTests {
    static func catalog() throws -> JobCatalog {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("carbscan-jobs-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try QueueMetricsTests.noop.write(to: directory.appendingPathComponent("noop.yml"), atomically: true, encoding: .utf8)
        return try JobCatalog.load(directory: directory.path)
    }

    @Test func postponedAndHandedBackJobsAreNeitherSuccessesNorFailures() async throws {
        let telemetry = Telemetry()
        let metrics = JobMetrics(catalog: try Self.catalog(), telemetry: telemetry)
        metrics.jobStarted(kind: "noop", queue: "default")
        metrics.jobFinished(kind: "noop", queue: "default", outcome: .postponed, duration: .milliseconds(3))
        metrics.jobStarted(kind: "noop", queue: "default")
        metrics.jobFinished(kind: "noop", queue: "default", outcome: .handedBack, duration: .milliseconds(3))
        let scrape = Scrape(text: try await telemetry.scrape())
        let job = [("queue", "default"), ("kind", "noop")]
        #expect(scrape.value("carbscan_jobs_started_total", job) == 2)
        #expect(scrape.value("carbscan_jobs_postponed_total", job) == 1)
        #expect(scrape.value("carbscan_jobs_failed_total", job) == 0)
        #expect(scrape.value("carbscan_jobs_succeeded_total", job) == 0)
        #expect(scrape.value("carbscan_job_duration_seconds_count", job) == 1)
    }

    @Test func kindsOutsideTheCatalogAreBounded() async throws {
        let telemetry = Telemetry()
        let metrics = JobMetrics(catalog: try Self.catalog(), telemetry: telemetry)
        for n in 0..<(JobMetrics.maxOtherKinds + 20) { metrics.jobStarted(kind: "stray-\(n)", queue: "default") }
        let scrape = Scrape(text: try await telemetry.scrape())
        let kinds = scrape.labelValues.filter { $0.hasPrefix("stray-") }
        #expect(kinds.count == JobMetrics.maxOtherKinds)
        #expect(scrape.value("carbscan_jobs_started_total", [("queue", "default"), ("kind", "other")]) == 20)
    }
}
