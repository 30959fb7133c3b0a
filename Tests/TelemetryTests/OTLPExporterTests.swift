import Foundation
import Logging
import ServiceLifecycle
import TestSupport
import Testing
import Traces

@testable import TraceExport

/// The OTLP/HTTP exporter against a local collector endpoint that decodes with the OpenTelemetry project's own
/// generated types (`OTLPReceiver`): every field the protobuf written here carries, batching, the shutdown's last
/// export, and the answers the specification says to retry or to drop on.
@Suite(.serialized) struct OTLPExporterTests {
    static func options(_ receiver: OTLPReceiver, delay: Duration = .seconds(60)) -> OTLPExportOptions {
        OTLPExportOptions(
            endpoint: receiver.tracesEndpoint, headers: [("x-team", "carbs"), ("Authorization", "Bearer s3cr3t")], timeout: .seconds(5),
            scheduleDelay: delay, exportTimeout: .seconds(10),
            resource: [("service.name", "carbscan-test"), ("deployment.environment.name", "ci")], version: "1.2.3")
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String { "the model timed out" }
    }

    /// One span of every shape, exported, read back field by field.
    @Test(.timeLimit(.minutes(1)))
    func everyFieldArrivesAsWritten() async throws {
        let receiver = try await OTLPReceiver.start()
        defer { receiver.stop() }
        let batch = SpanBatch()
        let recorder = SpanRecorder(batch: batch)
        var remote = InstrumentationContext.topLevel
        remote.spanIdentity = SpanIdentity(
            traceHigh: 0x4bf9_2f35_77b3_4da6, traceLow: 0xa3ce_929d_0e0e_4736, spanID: 0x00f0_67aa_0ba9_02b7, isSampled: true,
            tracestate: "congo=t61rcWkgMzE", isRemote: true)
        let server = recorder.startSpan("POST /api/mobile/v1/chat", context: remote, ofKind: .server)
        server.updateAttributes { attributes in
            attributes["text"] = "héllo ✓"
            attributes["count"] = 42
            attributes["negative"] = -7
            attributes["ratio"] = 0.25
            attributes["flag"] = true
            attributes["names"] = ["a", "b"]
            attributes["numbers"] = [1, 2, 3] as [Int64]
            attributes["empty"] = ""
        }
        server.addLink(SpanLink(context: remote, attributes: ["link.kind": "follows"]))
        let call = recorder.startSpan("POST", context: server.context, ofKind: .client)
        call.recordError(Failure())
        call.setStatus(SpanStatus(code: .error, message: "the model timed out"))
        call.end()
        server.end()
        let spans = batch.take().spans
        let sent = spans.decoded
        let exporter = OTLPExporter(options: Self.options(receiver), batch: batch, logger: Logger(label: "test"))
        await exporter.export(spans, deadline: .now + .seconds(10))

        let received = try receiver.spans()
        #expect(received.count == 2)
        let request = try #require(try receiver.requests().first)
        #expect(request.status == 200 && request.contentType == "application/x-protobuf" && request.deviations.isEmpty)
        #expect(request.headers["x-team"] == "carbs" && request.headers["authorization"] == "[redacted]")
        #expect(request.headers["user-agent"] == "carbscan-otlp/1.2.3")
        let parent = try #require(received.first { $0.kind == .server })
        let child = try #require(received.first { $0.kind == .client })
        #expect(parent.traceID == "4bf92f3577b34da6a3ce929d0e0e4736" && parent.parentSpanID == "00f067aa0ba902b7")
        #expect(parent.spanID == sent[1].identity.spanIDText && child.parentSpanID == parent.spanID && child.traceID == parent.traceID)
        #expect(parent.name == "POST /api/mobile/v1/chat" && parent.scope == "carbscan" && parent.service == "carbscan-test")
        #expect(parent.resource["deployment.environment.name"] == "ci")
        #expect(parent.attributes["text"] == "héllo ✓" && parent.attributes["count"] == 42 && parent.attributes["negative"] == -7)
        #expect(parent.attributes["ratio"] == 0.25 && parent.attributes["flag"] == true && parent.attributes["empty"] == "")
        #expect(parent.attributes["names"] == .array(["a", "b"]) && parent.attributes["numbers"] == .array([1, 2, 3]))
        #expect(parent.links.map(\.traceID) == [parent.traceID] && parent.links.map(\.spanID) == ["00f067aa0ba902b7"])
        #expect(parent.links.first?.attributes == ["link.kind": "follows"])
        #expect(parent.status == .unset && child.status == .error && child.statusMessage == "the model timed out")
        #expect(child.events == ["exception"])
        #expect(parent.startNanoseconds == sent[1].start && parent.endNanoseconds == sent[1].end)
        #expect(parent.startNanoseconds <= child.startNanoseconds && child.endNanoseconds <= parent.endNanoseconds)
    }

    /// Run as a service: a whole batch is sent at once (without waiting for the delay), larger backlogs a batch per
    /// request, and what ended before the shutdown is sent before `run()` returns.
    @Test(.timeLimit(.minutes(1)))
    func itSendsFullBatchesAtOnceAndTheRestAtShutdown() async throws {
        let receiver = try await OTLPReceiver.start()
        defer { receiver.stop() }
        let batch = SpanBatch(capacity: 100, exportSize: 4)
        let recorder = SpanRecorder(batch: batch)
        let exporter = OTLPExporter(options: Self.options(receiver), batch: batch, logger: Logger(label: "test"))
        let group = ServiceGroup(services: [exporter], logger: Logger(label: "test"))
        let running = Task { try await group.run() }
        for index in 0..<9 { recorder.startSpan("span \(index)", context: .topLevel).end() }
        // Two whole batches go at once (the delay is a minute); the ninth span waits.
        _ = try await receiver.waitForSpans { $0.count == 8 }
        #expect(try receiver.requests().map(\.spans) == [4, 4] && batch.count == 1)
        await group.triggerGracefulShutdown()
        try await running.value
        #expect(try receiver.spans().map(\.name).sorted() == (0..<9).map { "span \($0)" })
    }

    /// 429, 502, 503 and 504 are tried again (after `Retry-After` when named); another refusal drops the batch at once.
    @Test(.timeLimit(.minutes(1)))
    func aBusyCollectorIsTriedAgainAndARefusalIsNot() async throws {
        let receiver = try await OTLPReceiver.start()
        defer { receiver.stop() }
        let batch = SpanBatch()
        let recorder = SpanRecorder(batch: batch)
        let exporter = OTLPExporter(options: Self.options(receiver), batch: batch, logger: Logger(label: "test"))
        recorder.startSpan("kept", context: .topLevel).end()
        try receiver.refuse([(503, 1), (429, nil)])
        let clock = ContinuousClock()
        let started = clock.now
        await exporter.export(batch.take().spans, deadline: .now + .seconds(10))
        // Retry-After: 1, then the backoff's first second.
        #expect(clock.now - started >= .seconds(2))
        #expect(try receiver.requests().map(\.status) == [503, 429, 200] && receiver.spans().map(\.name) == ["kept"])

        recorder.startSpan("refused", context: .topLevel).end()
        try receiver.refuse([(400, nil)])
        await exporter.export(batch.take().spans, deadline: .now + .seconds(10))
        #expect(try receiver.requests().map(\.status) == [503, 429, 200, 400] && receiver.spans().map(\.name) == ["kept"])

        // Past the deadline it gives up rather than wait.
        recorder.startSpan("late", context: .topLevel).end()
        try receiver.refuse([(503, 30)])
        await exporter.export(batch.take().spans, deadline: .now + .seconds(2))
        #expect(try receiver.requests().count == 5 && receiver.spans().map(\.name) == ["kept"])
    }
}
