import Foundation
import JSON
import Logging
import Redis

/// A job kind's handler: what it does with its contract's parameters.
///
/// ```swift
/// struct NoopJob: JobKind {
///     typealias Contract = NoopContract
///     func run(_ parameters: Parameters, context: JobContext) async throws -> Contract.Result? { nil }
/// }
/// ```
public protocol JobKind: Sendable {
    associatedtype Contract: JobContract
    /// The payload as the producers enqueue it.
    typealias Parameters = Contract.Parameters
    /// Runs one attempt. Throw `JobFailure.permanent` for errors a retry cannot fix; any other error is retried
    /// with the kind's backoff. The task is cancelled when the kind's timeout passes or the worker shuts down.
    /// Returns the job's result (kept with the job for its retention), or nil.
    func run(_ parameters: Parameters, context: JobContext) async throws -> Contract.Result?
    /// Whether a job of the kind keeps a Postgres connection for most of its run (batches and sweeps that take
    /// seconds), so that each one running holds a pool connection or waits for one: a worker warns when its queues
    /// let more of them run at once than its pool has connections. Kinds that use Postgres for a statement or two
    /// (around a slow call, as the AI kinds do) say false: they wait for a connection only briefly.
    static var holdsDatabaseConnection: Bool { get }
}

extension JobKind {
    public static var holdsDatabaseConnection: Bool { false }

    /// The kind's name, as its contract and `jobs/<name>.yml` spell it.
    public static var name: String { Contract.name }
}

/// What a handler knows about the attempt it runs.
public struct JobContext: Sendable {
    public let id: JobID
    public let kind: String
    /// 1 for the first attempt.
    public let attempt: Int
    public let maxAttempts: Int
    /// The cron fire time that enqueued the job, if a schedule did.
    public let scheduledFor: Date?
    public let enqueuedAt: Date
    public let logger: Logger
    /// Where the handler publishes `delta` and `progress` events for the job's followers.
    public let events: JobEvents

    /// For running a handler outside a worker (tests that replay a delivery).
    public init(
        id: JobID, kind: String, attempt: Int, maxAttempts: Int, scheduledFor: Date? = nil, enqueuedAt: Date = Date(),
        logger: Logger = Logger(label: "job"), events: JobEvents = .discarding
    ) {
        self.id = id
        self.kind = kind
        self.attempt = attempt
        self.maxAttempts = maxAttempts
        self.scheduledFor = scheduledFor
        self.enqueuedAt = enqueuedAt
        self.logger = logger
        self.events = events
    }
}

/// A failure the handler classifies itself.
public struct JobFailure: Error, CustomStringConvertible, Sendable {
    public enum Kind: Sendable { case retryable, permanent }
    public let kind: Kind
    public let message: String
    /// Wait at least this long before the retry (e.g. a provider's `Retry-After`).
    public let retryAfter: Duration?

    /// Goes to the dead set at once: bad input, a 4xx from a provider, a payload that cannot be decoded.
    public static func permanent(_ message: String) -> JobFailure { JobFailure(kind: .permanent, message: message, retryAfter: nil) }
    public static func retryable(_ message: String, after: Duration? = nil) -> JobFailure {
        JobFailure(kind: .retryable, message: message, retryAfter: after)
    }
    public var description: String { message }
}

/// An error that says a service the job needs is unreachable (a database or Redis outage), not that the job is
/// wrong. A worker postpones such a job without spending an attempt (`JobOutcome.postpone`), so an outage, however
/// long, never sends accepted work to the dead set. Client errors conform where the engine can see their module.
public protocol DependencyOutage: Error {
    /// False for the same error type's other cases (a refused command, a constraint violation).
    var isOutage: Bool { get }
}

extension RedisError: DependencyOutage {}

/// Handlers by kind name. Decoding the payload is part of the handler: a payload that does not decode is a
/// permanent failure (dead at once, never a retry loop).
public struct JobRegistry: Sendable {
    /// One kind's handler: the payload as enqueued in, the result's JSON (or nil) out.
    ///
    /// A struct rather than the bare closure: a closure stored in a dictionary is kept at the dictionary's generic
    /// abstraction, and calling one taken out of it goes through a reabstraction thunk whose async frame (176 bytes)
    /// every running job kept for as long as it ran.
    public struct Handler: Sendable {
        @usableFromInline let run: @Sendable (_ payload: String, _ context: JobContext) async throws -> String?

        @usableFromInline init(_ run: @escaping @Sendable (_ payload: String, _ context: JobContext) async throws -> String?) {
            self.run = run
        }

        @inlinable
        public func callAsFunction(_ payload: String, _ context: JobContext) async throws -> String? {
            try await run(payload, context)
        }
    }

    private var handlers: [String: Handler] = [:]
    /// The kinds whose jobs hold a Postgres connection while they run (``JobKind/holdsDatabaseConnection``).
    public private(set) var databaseBoundKinds: Set<String> = []

    public init() {}

    /// Inlinable so that the handler is compiled for the concrete kind where the kinds are registered: as generic
    /// code its parameters and result were allocated at run time beside its frame and it reached the kind through
    /// its witness thunk, some 500 bytes more that every job running the kind kept (an AI call holds them for seconds).
    @inlinable
    public mutating func register<Kind: JobKind>(_ kind: Kind) {
        add(Kind.name, holdsDatabaseConnection: Kind.holdsDatabaseConnection) { payload, context in
            let parameters = try Self.decode(Kind.Parameters.self, payload, kind: Kind.name)
            guard let result = try await kind.run(parameters, context: context) else { return nil }
            return try Self.encode(result)
        }
    }

    @usableFromInline
    mutating func add(
        _ name: String, holdsDatabaseConnection: Bool, _ run: @escaping @Sendable (String, JobContext) async throws -> String?
    ) {
        if holdsDatabaseConnection { databaseBoundKinds.insert(name) }
        handlers[name] = Handler(run)
    }

    /// Out of line, so that the decoder's temporaries are not part of the handler's frame.
    @usableFromInline @inline(never)
    static func decode<Parameters: Decodable>(_ type: Parameters.Type, _ payload: String, kind: String) throws -> Parameters {
        do {
            return try JSONValueDecoder().decode(type, fromJSON: payload)
        } catch {
            throw JobFailure.permanent("undecodable payload for \(kind): \(describe(error))")
        }
    }

    @usableFromInline @inline(never)
    static func encode<Result: Encodable>(_ result: Result) throws -> String {
        try JSONValueEncoder().encode(result).jsonString
    }

    public func handler(for kind: String) -> Handler? { handlers[kind] }
    public var kinds: [String] { handlers.keys.sorted() }

    static func describe(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "\(error)" }
        switch error {
        case .typeMismatch(_, let c), .valueNotFound(_, let c), .dataCorrupted(let c):
            let path = c.codingPath.map(\.stringValue).joined(separator: ".")
            return path.isEmpty ? c.debugDescription : "\(path): \(c.debugDescription)"
        case .keyNotFound(let key, _):
            return "missing field '\(key.stringValue)'"
        @unknown default:
            return "\(error)"
        }
    }
}
