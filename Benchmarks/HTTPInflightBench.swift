import ArgumentParser
import Foundation
import Glibc
import Logging
import OutboundHTTP

/// `carbscan-bench http-inflight`: what one outbound request in flight costs this process, from its RSS while
/// thousands are held open by a slow server (`ops/bench/http_inflight_peer.py`, driven by `ops/bench/http-inflight.sh`).
struct HTTPInflightBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "http-inflight",
        abstract: "RSS per outbound HTTP request in flight, through one HTTPClient; prints JSON.",
        discussion: """
            Sends --requests POSTs at once (a JSON body of --body-bytes, like a chat completion call) to --url, a \
            server that holds each until all are in flight (polled at --stats-url), then answers them all. RSS is read \
            from /proc/self/status before sending (after one warm-up request), once the server holds every request, \
            and at its peak (VmHWM); per-request figures divide the growth by --requests.
            """)

    @Option(help: "Where to send the held requests.") var url: String
    @Option(help: "The server's /stats URL: {\"in_flight\": …, \"connections\": …}.") var statsURL: String
    @Option(help: "Requests in flight at once.") var requests: Int = 10_000
    @Option(help: "Bytes of each request's JSON body.") var bodyBytes: Int = 1024
    @Option(help: "HTTPClientOptions.maxConnectionsPerHost (0: no limit).") var maxConnectionsPerHost: Int = HTTPClientOptions()
        .maxConnectionsPerHost
    @Option(help: "A PEM file of CAs to trust (the server's test CA).") var caBundle: String?

    func run() async throws {
        BenchOptions.bootstrapLogging()
        let logger = Logger(label: "carbscan.bench")
        BenchOptions.raiseOpenFileLimit()
        let client = HTTPClient(
            options: HTTPClientOptions(
                connectTimeout: .seconds(60), totalTimeout: .seconds(600), maxConnectionsPerHost: maxConnectionsPerHost,
                caBundlePath: caBundle),
            logger: logger)
        defer { client.shutdown() }

        func stats() async throws -> [String: Int] {
            let response = try await client.send(HTTPRequest(url: statsURL))
            guard let object = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Int] else {
                throw BenchError("\(statsURL) did not answer a JSON object of numbers")
            }
            return object
        }
        _ = try await stats()
        let baseline = Self.status()
        let cpuBefore = cpuSeconds(RUSAGE_SELF)

        let padding = String(repeating: "x", count: max(0, bodyBytes - 60))
        let body = Array(#"{"model":"bench","messages":[{"role":"user","content":"\#(padding)"}]}"#.utf8)
        let request = HTTPRequest(method: .post, url: url, headers: [(name: "Content-Type", value: "application/json")], body: body)
        let started = ContinuousClock.now
        let (held, peak, failures, firstError, connections) = try await withThrowingTaskGroup(of: HTTPClientError?.self) { group in
            for _ in 0..<requests {
                group.addTask {
                    do throws(HTTPClientError) {
                        let response = try await client.send(request)
                        return response.status == 200 ? nil : HTTPClientError(.transport, "status \(response.status)")
                    } catch {
                        return error
                    }
                }
            }
            var counts = try await stats()
            while counts["in_flight", default: 0] < requests && counts["answered", default: 0] == 0 {
                guard ContinuousClock.now - started < .seconds(300) else { throw BenchError("the server never held \(requests) requests") }
                try await Task.sleep(for: .milliseconds(250))
                counts = try await stats()
            }
            let held = (Self.status(), ContinuousClock.now - started, counts["connections", default: 0])
            var failures = 0
            var firstError: HTTPClientError?
            for try await error in group {
                guard let error else { continue }
                failures += 1
                firstError = firstError ?? error
            }
            return (held, Self.status(), failures, firstError, held.2)
        }

        let perRequest = { (kilobytes: Int) in Double((kilobytes - baseline.rss) * 1024) / Double(requests) }
        let summary: [String: Any] = [
            "requests": requests, "body_bytes": body.count, "failed": failures, "first_error": firstError.map { "\($0)" } ?? "none",
            "server_connections": connections,
            "seconds_until_all_held": Double(held.1.components.seconds) + Double(held.1.components.attoseconds) / 1e18,
            "rss_baseline_kib": baseline.rss, "rss_all_held_kib": held.0.rss, "rss_peak_kib": peak.peak,
            "rss_bytes_per_request_held": perRequest(held.0.rss).rounded(), "rss_bytes_per_request_peak": perRequest(peak.peak).rounded(),
            "cpu_seconds": ((cpuSeconds(RUSAGE_SELF) - cpuBefore) * 100).rounded() / 100,
        ]
        let data = try JSONSerialization.data(withJSONObject: summary, options: [.prettyPrinted, .sortedKeys])
        FileHandle.standardOutput.write(data + Data("\n".utf8))
    }

    /// VmRSS and VmHWM (the peak so far) of this process, in KiB.
    private static func status() -> (rss: Int, peak: Int) {
        let text = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        func field(_ name: String) -> Int {
            guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }) else { return 0 }
            return Int(line.split(whereSeparator: \.isWhitespace).dropFirst().first ?? "") ?? 0
        }
        return (field("VmRSS"), field("VmHWM"))
    }

}
