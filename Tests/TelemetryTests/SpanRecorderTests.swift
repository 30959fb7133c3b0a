import Testing
import Traces

/// The tracer that records sampled spans into a batch for the exporter: ids, parents, what a span keeps, and the
/// batch's bounds. (Tracing stays off in this process: the recorder is driven directly.)
@Suite struct SpanRecorderTests {
    static let remote = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

    static func parent(_ header: String, tracestate: String? = nil) throws -> InstrumentationContext {
        guard
            case .sampled(let parent) = TraceSampling(followsParent: true, ratio: 1).decide(
                parent: Traceparent(header), tracestate: tracestate)
        else { throw SpanRecorderError.dropped }
        return parent.context
    }

    enum SpanRecorderError: Error { case dropped }

    @Test func aSpanContinuesItsRemoteParentAndItsChildContinuesIt() throws {
        let batch = SpanBatch()
        let recorder = SpanRecorder(batch: batch)
        let remote = try Self.parent(Self.remote, tracestate: "congo=t61")
        let server = recorder.startSpan("GET", context: remote, ofKind: .server)
        let call = recorder.startSpan("POST", context: server.context, ofKind: .client)
        call.end()
        server.end()
        let spans = batch.take().spans.decoded
        #expect(spans.map(\.name) == ["POST", "GET"])
        let (child, parent) = (spans[0], spans[1])
        #expect(
            parent.identity.traceID == "4bf92f3577b34da6a3ce929d0e0e4736" && parent.parentID == 0x00f0_67aa_0ba9_02b7
                && parent.parentIsRemote)
        #expect(child.parentID == parent.identity.spanID && !child.parentIsRemote && child.identity.traceID == parent.identity.traceID)
        #expect(parent.identity.tracestate == "congo=t61" && child.identity.tracestate == "congo=t61")
        #expect(parent.identity.spanID != child.identity.spanID && parent.kind == .server && child.kind == .client)
        #expect(parent.start <= child.start && child.end <= parent.end)
        // What the span sends on: its own id as the parent, sampled.
        let sent = server.context.spanIdentity!.traceparent
        #expect(sent.text == "00-4bf92f3577b34da6a3ce929d0e0e4736-\(parent.identity.spanIDText)-01")
    }

    /// A span started through the `Tracing` API (which passes `InstrumentationContext.current`) while one of this
    /// process's is current, bound as `CurrentTrace` and not as a context, is its child.
    @Test func aSpanStartedUnderTheCurrentSpanIsItsChild() throws {
        let batch = SpanBatch()
        let recorder = SpanRecorder(batch: batch)
        guard case .recorded(let job) = recorder.startSpan("process ai", context: .topLevel, ofKind: .consumer) else {
            throw SpanRecorderError.dropped
        }
        CurrentTrace.local.withValue(.span(job)) {
            recorder.startSpan("POST", context: InstrumentationContext.current ?? .topLevel, ofKind: .client).end()
        }
        recorder.startSpan("later", context: .topLevel).end()
        job.end()
        let spans = batch.take().spans.decoded
        #expect(spans.map(\.name) == ["POST", "later", "process ai"])
        #expect(spans[0].parentID == spans[2].identity.spanID && spans[0].identity.traceID == spans[2].identity.traceID)
        #expect(spans[1].parentID == 0 && spans[1].identity.traceID != spans[2].identity.traceID)
    }

    /// The sampler's remote parent starts the same span directly as through a context holding it.
    @Test func theSamplersParentStartsTheSpanItsContextWould() throws {
        let batch = SpanBatch()
        let recorder = SpanRecorder(batch: batch)
        guard
            case .sampled(let parent) = TraceSampling(followsParent: true, ratio: 1).decide(
                parent: Traceparent(Self.remote), tracestate: "congo=t61")
        else { throw SpanRecorderError.dropped }
        let direct = recorder.startSpan("GET", parent: parent, ofKind: .server, at: 1)
        let bound = recorder.startSpan("GET", context: parent.context, ofKind: .server)
        #expect(direct.context.spanIdentity?.isRemote == false && direct.context.spanIdentity?.isSampled == true)
        direct.end()
        bound.end()
        let spans = batch.take().spans.decoded
        #expect(spans.count == 2)
        for span in spans {
            #expect(span.identity.traceID == "4bf92f3577b34da6a3ce929d0e0e4736" && span.identity.tracestate == "congo=t61")
            #expect(span.parentID == 0x00f0_67aa_0ba9_02b7 && span.parentIsRemote)
        }
        #expect(spans[0].identity.spanID != spans[1].identity.spanID)
    }

    /// A trace the ratio kept is started on the very id it was drawn on, so another process drawing on it keeps it too.
    @Test func aKeptRootStartsOnTheIdsTheSamplerDrew() throws {
        let tenth = TraceSampling(followsParent: false, ratio: 0.1)
        let recorder = SpanRecorder(batch: SpanBatch())
        var kept = 0
        for _ in 0..<2000 {
            guard case .sampled(let root) = tenth.decide(parent: nil) else { continue }
            kept += 1
            // Either way in: the sampler's parent directly (a request, a job), or bound as a context (an enqueue).
            let span =
                kept.isMultiple(of: 2)
                ? recorder.startSpan("send ai", context: root.context, ofKind: .producer)
                : recorder.startSpan("send ai", parent: root, ofKind: .producer, at: 1)
            #expect(tenth.dropped(parent: span.context.spanIdentity!.traceparent) == nil)
            span.end()
        }
        #expect(kept > 100)
    }

    @Test func underAParentThatIsNotSampledNothingIsRecorded() throws {
        let batch = SpanBatch()
        var unsampled = InstrumentationContext.topLevel
        unsampled.spanIdentity = SpanIdentity(traceHigh: 1, traceLow: 2, spanID: 3, isSampled: false, tracestate: nil, isRemote: true)
        let span = SpanRecorder(batch: batch).startSpan("GET", context: unsampled, ofKind: .server)
        span.attributes["a"] = 1
        span.end()
        #expect(!span.isRecording && span.context.spanIdentity == unsampled.spanIdentity && batch.count == 0)
    }

    /// What a span keeps until it ends, by OpenTelemetry's rules: `ok` is final and carries no message, an error is an
    /// `exception` event, and nothing changes once it has ended (a second end appends nothing).
    @Test func aSpanKeepsWhatItIsToldUntilItEnds() throws {
        struct Refused: Error {}
        let batch = SpanBatch()
        let span = SpanRecorder(batch: batch).startSpan("GET", context: .topLevel, ofKind: .server)
        span.updateAttributes { $0["http.request.method"] = "GET" }
        span.attributes["http.response.status_code"] = 200
        span.set("carbscan.retried", true)
        span.set(["http.response.status_code": 201, "user_agent.original": "app"])
        span.operationName = "GET /meals"
        span.setStatus(SpanStatus(code: .ok, message: "dropped"))
        span.setStatus(SpanStatus(code: .error, message: "ignored: ok is final"))
        span.recordError(Refused())
        #expect(span.isRecording)
        span.end()
        #expect(!span.isRecording)
        span.attributes["late"] = true
        span.setStatus(SpanStatus(code: .error))
        span.end()
        let spans = batch.take().spans.decoded
        #expect(spans.count == 1)
        let finished = try #require(spans.first)
        #expect(finished.name == "GET /meals" && finished.parentID == 0)
        // Set through either API, in the order set, a key set again written anew at the end, once.
        #expect(
            finished.fields.entries.map(\.key) == [
                "http.request.method", "carbscan.retried", "http.response.status_code", "user_agent.original",
            ])
        #expect(finished.fields["http.request.method"] == .string("GET"))
        #expect(finished.fields["http.response.status_code"] == .int(201))
        #expect(finished.fields["carbscan.retried"] == .bool(true))
        #expect(finished.fields["late"] == nil)
        #expect(finished.status == SpanStatus(code: .ok) && finished.status?.message == nil)
        #expect(finished.events.map(\.name) == ["exception"])
        #expect(finished.events[0].attributes["exception.type"] == .string("Refused"))
    }

    /// The batch wakes its exporter when a whole export batch waits, hands out at most that many at a time, and
    /// past its capacity drops spans and counts them.
    @Test func theBatchIsBoundedAndWakesItsExporter() async throws {
        let batch = SpanBatch(capacity: 5, exportSize: 2)
        let recorder = SpanRecorder(batch: batch)
        let woken = Task { await batch.wait() }
        for index in 0..<7 { recorder.startSpan("span \(index)", context: .topLevel).end() }
        await woken.value  // woken by the second span
        #expect(batch.count == 5)
        let first = batch.take()
        #expect(first.spans.decoded.map(\.name) == ["span 0", "span 1"] && first.dropped == 2)
        #expect(batch.take().spans.decoded.map(\.name) == ["span 2", "span 3"])
        #expect(batch.take().spans.decoded.map(\.name) == ["span 4"] && batch.take().spans.decoded.isEmpty)
        // A wake with no waiter is kept for the next wait.
        batch.wake()
        await batch.wait()
    }
}
