import Logging
import OutboundHTTP
import ServiceLifecycle
import Traces

/// What the OTLP/HTTP exporter is told by the standard variables (read by the executable's `TracingSetup`).
public struct OTLPExportOptions: Sendable {
    /// The whole URL spans are posted to (`…/v1/traces`).
    public var endpoint: String
    /// Sent with every export (`OTEL_EXPORTER_OTLP_HEADERS`: a vendor's key).
    public var headers: [(name: String, value: String)]
    /// One request's time limit (`OTEL_EXPORTER_OTLP_TIMEOUT`, 10 s).
    public var timeout: Duration
    /// A PEM file of the authorities to trust for an `https` endpoint (`OTEL_EXPORTER_OTLP_CERTIFICATE`).
    public var certificate: String?
    /// How long ended spans may wait before they are sent (`OTEL_BSP_SCHEDULE_DELAY`, 5 s).
    public var scheduleDelay: Duration
    /// How long one batch is tried, retries included (`OTEL_BSP_EXPORT_TIMEOUT`, 30 s).
    public var exportTimeout: Duration
    /// The resource's attributes: `service.name`, `service.version`, `OTEL_RESOURCE_ATTRIBUTES`, the SDK's.
    public var resource: [(key: String, value: String)]
    /// The instrumentation scope's version (the build's).
    public var version: String

    public init(
        endpoint: String, headers: [(name: String, value: String)] = [], timeout: Duration = .seconds(10), certificate: String? = nil,
        scheduleDelay: Duration = .seconds(5), exportTimeout: Duration = .seconds(30), resource: [(key: String, value: String)],
        version: String
    ) {
        self.endpoint = endpoint
        self.headers = headers
        self.timeout = timeout
        self.certificate = certificate
        self.scheduleDelay = scheduleDelay
        self.exportTimeout = exportTimeout
        self.resource = resource
        self.version = version
    }
}

/// Sends the spans a ``SpanBatch`` collects to an OTLP/HTTP collector, binary protobuf, as the OTLP specification
/// says (https://opentelemetry.io/docs/specs/otlp/#otlphttp): a batch when `exportSize` spans wait or the schedule
/// delay has passed; 429, 502, 503 and 504 and a failed connection retried (after `Retry-After` when the collector
/// names it, else 1 s doubling to 30 s) until the export timeout; any other answer drops the batch, logged with the
/// collector's `google.rpc.Status` message. A partial success's rejected spans are logged. Run first in the process's
/// service group, it stops last, and sends what is left before it returns.
public final class OTLPExporter: Service, Sendable {
    private let options: OTLPExportOptions
    private let batch: SpanBatch
    private let client: HTTPClient
    private let request: OTLPTraceRequest
    private let logger: Logger

    public init(options: OTLPExportOptions, batch: SpanBatch, logger: Logger) {
        self.options = options
        self.batch = batch
        self.logger = logger
        client = HTTPClient(
            options: HTTPClientOptions(
                totalTimeout: options.timeout, maxResponseBytes: 1 << 20, userAgent: "carbscan-otlp/\(options.version)",
                maxConnectionsPerHost: 1, caBundlePath: options.certificate),
            logger: logger, threadName: "carbscan.otlp")
        request = OTLPTraceRequest(resource: options.resource, scope: ("carbscan", options.version))
    }

    public func run() async {
        // Its own requests are no part of any trace.
        await CurrentTrace.local.withValue(nil) { await exportUntilShutdown() }
    }

    private func exportUntilShutdown() async {
        await InstrumentationContext.$current.withValue(nil) {
            await withGracefulShutdownHandler {
                var lastSent = ContinuousClock.now
                while !Task.isShuttingDownGracefully {
                    await waitForSpans()
                    // Woken by a whole batch, only whole batches go; once the delay has passed, everything.
                    let due = ContinuousClock.now - lastSent >= options.scheduleDelay
                    await sendWaiting(deadline: nil, partial: due)
                    if due { lastSent = .now }
                }
            } onGracefulShutdown: {
                self.batch.wake()
            }
            // What ended before the shutdown, within one export timeout.
            await sendWaiting(deadline: .now + options.exportTimeout, partial: true)
        }
        client.shutdown()
    }

    /// Returns when a whole batch waits, the schedule delay has passed, or the process is stopping.
    private func waitForSpans() async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { [batch, delay = options.scheduleDelay] in
                guard (try? await Task.sleep(for: delay)) != nil else { return }
                batch.wake()
            }
            await batch.wait()
            group.cancelAll()
        }
    }

    /// Sends the spans waiting, a batch at a time: every one, or (`partial` false) only whole batches.
    private func sendWaiting(deadline: ContinuousClock.Instant?, partial: Bool) async {
        while partial || batch.count >= batch.exportSize {
            let (spans, dropped) = batch.take()
            if dropped > 0 {
                logger.warning(
                    "spans dropped: the export queue was full",
                    metadata: ["spans": "\(dropped)", "queue_size": "\(batch.capacity)"])
            }
            if spans.isEmpty { return }
            let whole = spans.count == batch.exportSize
            await export(spans, deadline: deadline ?? .now + options.exportTimeout)
            batch.recycle(consume spans)
            if !whole { return }
        }
    }

    /// Sends one batch, retrying what the specification calls retryable until `deadline`.
    func export(_ spans: EncodedSpans, deadline: ContinuousClock.Instant) async {
        let body = HTTPRequestBody(request.encode(spans))
        let post = HTTPRequest(
            method: .post, url: options.endpoint, headers: options.headers + [("Content-Type", "application/x-protobuf")], sharing: body,
            provider: "otlp")
        var backoff = Duration.seconds(1)
        while true {
            let failure: String
            var wait = backoff
            do {
                let response = try await client.send(post)
                switch response.status {
                case 200..<300:
                    reportPartialSuccess(response.body, of: spans.count)
                    return
                case 429, 502, 503, 504:
                    failure = "HTTP \(response.status)\(Self.message(response.body).map { ": \($0)" } ?? "")"
                    wait = response.retryAfter() ?? backoff
                default:
                    logger.warning(
                        "spans dropped: the collector refused them",
                        metadata: [
                            "spans": "\(spans.count)", "status": "\(response.status)",
                            "message": "\(Self.message(response.body) ?? "")",
                        ])
                    return
                }
            } catch {
                failure = error.description
            }
            guard ContinuousClock.now + wait < deadline, !Task.isCancelled else {
                logger.warning(
                    "spans dropped: the collector could not be reached in time",
                    metadata: ["spans": "\(spans.count)", "error": "\(failure)"])
                return
            }
            try? await Task.sleep(for: wait)
            backoff = min(backoff * 2, .seconds(30))
        }
    }

    /// An `ExportTraceServiceResponse`'s `partial_success` (field 1): `rejected_spans` (1), `error_message` (2).
    private func reportPartialSuccess(_ body: [UInt8], of count: Int) {
        guard case .bytes(let partial)? = ProtobufReader.fields(of: body[...])?.first(where: { $0.field == 1 })?.value,
            let fields = ProtobufReader.fields(of: partial)
        else { return }
        var rejected: UInt64 = 0
        var message = ""
        for (field, value) in fields {
            if field == 1, case .number(let number) = value { rejected = number }
            if field == 2, let text = value.text { message = text }
        }
        if rejected > 0 || !message.isEmpty {
            logger.warning(
                "spans rejected by the collector", metadata: ["spans": "\(count)", "rejected": "\(rejected)", "message": "\(message)"])
        }
    }

    /// A failure's `google.rpc.Status` message (field 2), when the body is one.
    static func message(_ body: [UInt8]) -> String? {
        ProtobufReader.fields(of: body[...])?.first { $0.field == 2 }?.value.text
    }
}
