import Foundation

/// A local OpenTelemetry collector endpoint (`otlp_receiver.py` beside this file, with `opentelemetry-proto` from
/// `.local/venv`): OTLP/HTTP traces over plain HTTP/1.1, binary protobuf or OTLP/JSON, gzip or not, answered as the
/// OTLP specification says (200 with an ExportTraceServiceResponse; 400, 404, 405, 413, 415 with a google.rpc.Status).
/// It keeps every span it accepts (``spans()``) and every request (``requests()``); a process whose
/// `OTEL_EXPORTER_OTLP_ENDPOINT` is ``endpoint`` (see ``environment(service:)``) exports its traces here.
// @unchecked: every stored property is a constant, and the process is only asked whether it runs and terminated.
public final class OTLPReceiver: @unchecked Sendable {
    /// One span as the receiver decoded it (a line of its `spans.jsonl`).
    public struct Span: Decodable, Sendable, CustomStringConvertible {
        public enum Kind: String, Decodable, Sendable {
            case unspecified = "UNSPECIFIED"
            case `internal` = "INTERNAL"
            case server = "SERVER"
            case client = "CLIENT"
            case producer = "PRODUCER"
            case consumer = "CONSUMER"
        }

        public enum Status: String, Decodable, Sendable {
            case unset = "UNSET"
            case ok = "OK"
            case error = "ERROR"
        }

        public struct Link: Decodable, Sendable, Equatable {
            public var traceID: String
            public var spanID: String
            public var attributes: [String: AttributeValue]

            enum CodingKeys: String, CodingKey {
                case traceID = "trace_id"
                case spanID = "span_id"
                case attributes
            }
        }

        /// 32 lowercase hex digits.
        public var traceID: String
        /// 16 lowercase hex digits.
        public var spanID: String
        /// The parent's span id, empty for a root span (one started without a parent, or continuing none).
        public var parentSpanID: String
        public var name: String
        public var kind: Kind
        /// The resource's `service.name` (`OTEL_SERVICE_NAME`), nil when the resource has none.
        public var service: String?
        /// The instrumentation scope's name.
        public var scope: String
        /// Every resource attribute (`service.name`, `OTEL_RESOURCE_ATTRIBUTES`, the SDK's `telemetry.sdk.*`, …).
        public var resource: [String: AttributeValue]
        public var attributes: [String: AttributeValue]
        public var status: Status
        public var statusMessage: String
        /// Nanoseconds since the Unix epoch.
        public var startNanoseconds: UInt64
        public var endNanoseconds: UInt64
        public var links: [Link]
        /// The events' names, in order (`exception` for a recorded error).
        public var events: [String]

        public var isRoot: Bool { parentSpanID.isEmpty }
        public var description: String { "\(service ?? "?") \(kind.rawValue) \(name) \(traceID)/\(spanID)<-\(parentSpanID)" }

        enum CodingKeys: String, CodingKey {
            case traceID = "trace_id"
            case spanID = "span_id"
            case parentSpanID = "parent_span_id"
            case name, kind, service, scope, resource, attributes, status
            case statusMessage = "status_message"
            case startNanoseconds = "start_ns"
            case endNanoseconds = "end_ns"
            case links, events
        }
    }

    /// An attribute's value as OTLP carries it: `#expect(span.attributes["http.response.status_code"] == 200)`.
    /// Bytes arrive as base64 strings; a double with an integral value reads as an int (the JSON line cannot tell), and
    /// compares equal to it.
    public enum AttributeValue: Decodable, Sendable, Equatable, CustomStringConvertible, ExpressibleByStringLiteral,
        ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral, ExpressibleByBooleanLiteral
    {
        case string(String)
        case int(Int)
        case double(Double)
        case bool(Bool)
        case array([AttributeValue])
        /// A key-value list (rare in attributes).
        case map([String: AttributeValue])
        /// An AnyValue with no value set.
        case null

        public init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if container.decodeNil() {
                self = .null
            } else if let value = try? container.decode(Bool.self) {
                self = .bool(value)
            } else if let value = try? container.decode(Int.self) {
                self = .int(value)
            } else if let value = try? container.decode(Double.self) {
                self = .double(value)
            } else if let value = try? container.decode(String.self) {
                self = .string(value)
            } else if let value = try? container.decode([AttributeValue].self) {
                self = .array(value)
            } else {
                self = .map(try container.decode([String: AttributeValue].self))
            }
        }

        public init(stringLiteral value: String) { self = .string(value) }
        public init(integerLiteral value: Int) { self = .int(value) }
        public init(floatLiteral value: Double) { self = .double(value) }
        public init(booleanLiteral value: Bool) { self = .bool(value) }

        public static func == (lhs: AttributeValue, rhs: AttributeValue) -> Bool {
            switch (lhs, rhs) {
            case (.string(let a), .string(let b)): a == b
            case (.int(let a), .int(let b)): a == b
            case (.double(let a), .double(let b)): a == b
            case (.int(let a), .double(let b)), (.double(let b), .int(let a)): Double(a) == b
            case (.bool(let a), .bool(let b)): a == b
            case (.array(let a), .array(let b)): a == b
            case (.map(let a), .map(let b)): a == b
            case (.null, .null): true
            default: false
            }
        }

        public var string: String? {
            if case .string(let value) = self { value } else { nil }
        }

        public var int: Int? {
            if case .int(let value) = self { value } else { nil }
        }

        public var description: String {
            switch self {
            case .string(let value): "\"\(value)\""
            case .int(let value): "\(value)"
            case .double(let value): "\(value)"
            case .bool(let value): "\(value)"
            case .array(let values): "\(values)"
            case .map(let values): "\(values)"
            case .null: "null"
            }
        }
    }

    /// One HTTP request as the receiver saw it (a line of its `requests.jsonl`).
    public struct Request: Decodable, Sendable {
        public var path: String
        public var method: String
        public var contentType: String?
        public var contentEncoding: String?
        /// The status answered: 200, or 400/404/405/413/415 (500 only for a bug in the receiver).
        public var status: Int
        /// How many spans the request carried (0 when refused).
        public var spans: Int
        /// The google.rpc.Status message answered, nil on success.
        public var error: String?
        /// OTLP/JSON rules the sender broke that the receiver tolerated (an enum name for its integer, a snake_case
        /// key ignored as unknown); a conforming exporter leaves this empty.
        public var deviations: [String]
        /// Lowercase names; `authorization` and `proxy-authorization` values are `[redacted]`.
        public var headers: [String: String]

        enum CodingKeys: String, CodingKey {
            case path, method
            case contentType = "content_type"
            case contentEncoding = "content_encoding"
            case status, spans, error, deviations, headers
        }
    }

    public let port: Int
    private let directory: URL
    private let process: Process

    /// `http://127.0.0.1:PORT`, what `OTEL_EXPORTER_OTLP_ENDPOINT` takes (the exporter appends `/v1/traces`).
    public var endpoint: String { "http://127.0.0.1:\(port)" }
    /// `http://127.0.0.1:PORT/v1/traces`, what `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` takes (used as is).
    public var tracesEndpoint: String { "\(endpoint)/v1/traces" }

    private init(port: Int, directory: URL, process: Process) {
        self.port = port
        self.directory = directory
        self.process = process
    }

    deinit { stop() }

    public func stop() {
        if process.isRunning { process.terminate() }
        try? FileManager.default.removeItem(at: directory)
    }

    /// The next exports are refused, one per entry, with `status` (and `Retry-After` seconds when given), as a collector
    /// under load (429, 503) or one rejecting a batch (400) answers; their spans are not kept.
    public func refuse(_ answers: [(status: Int, retryAfter: Int?)]) throws {
        let lines = answers.map { answer in answer.retryAfter.map { "\(answer.status) \($0)\n" } ?? "\(answer.status)\n" }
        try lines.joined().write(to: directory.appendingPathComponent("refusals"), atomically: true, encoding: .utf8)
    }

    /// Starts the receiver on a free loopback port and waits until it listens.
    public static func start() async throws -> OTLPReceiver {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("otlp-receiver-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let (port, process) = try await PeerCertificates.startPeer(
            script: "otlp_receiver.py", arguments: [directory.path], directory: directory, requirements: "opentelemetry-proto")
        return OTLPReceiver(port: port, directory: directory, process: process)
    }

    /// The environment that points a CarbScan process at this receiver: its endpoint, `service` as the service name,
    /// every trace sampled, and the batch processor's delay cut from 5 s to 100 ms so spans arrive while a test waits.
    public func environment(service: String) -> [String: String] {
        [
            "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_SERVICE_NAME": service, "OTEL_TRACES_SAMPLER": "always_on",
            "OTEL_BSP_SCHEDULE_DELAY": "100",
        ]
    }

    /// Every span received so far, in the order they arrived.
    public func spans() throws -> [Span] { try lines("spans.jsonl") }

    /// The spans of one trace (hex, either case), in the order they arrived.
    public func spans(inTrace traceID: String) throws -> [Span] {
        let traceID = traceID.lowercased()
        return try spans().filter { $0.traceID == traceID }
    }

    /// Every request so far, refused ones included, oldest first.
    public func requests() throws -> [Request] { try lines("requests.jsonl") }

    /// Waits until the spans received satisfy `condition` and returns them; throws, naming what did arrive, when
    /// `timeout` passes first. Exporters batch, so a span ended just now may take the batch delay to arrive.
    @discardableResult
    public func waitForSpans(timeout: Duration = .seconds(15), where condition: ([Span]) throws -> Bool) async throws -> [Span] {
        var received: [Span] = []
        let met = try await eventually(timeout: timeout) {
            received = try spans()
            return try condition(received)
        }
        guard met else {
            throw ServerError("the OTLP receiver did not get the spans awaited within \(timeout); it got \(received.count): \(received)")
        }
        return received
    }

    /// The complete lines of a JSONL file (a line being written is left for the next read).
    private func lines<Line: Decodable>(_ name: String) throws -> [Line] {
        guard let data = try? Data(contentsOf: directory.appendingPathComponent(name)) else { return [] }
        let complete = data.lastIndex(of: UInt8(ascii: "\n")).map { data[...$0] } ?? Data()
        return try complete.split(separator: UInt8(ascii: "\n")).map { try JSONDecoder().decode(Line.self, from: Data($0)) }
    }
}
