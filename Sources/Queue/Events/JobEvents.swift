/// What a running job tells the clients that follow it (`GET /jobs/{id}/events`) besides its state changes: the text
/// it produces as it goes (`delta`: a chat answer as the model writes it) and the steps it passes (`progress`: an
/// analysis's image received, model asked, answer parsed).
///
/// Events of kinds whose job file says `events: true` land on the job's own capped Redis stream beside its record
/// (``JobEventLog``); for other kinds, and outside a worker, they go nowhere. Publishing never fails the job: an
/// event lost to a Redis outage costs a follower some text, which the job's result carries whole anyway.
public struct JobEvents: Sendable {
    /// One event: its type (`delta`, `progress`) and its fields.
    public typealias Publish = @Sendable (_ type: String, _ fields: [(String, String)]) async -> Void

    private let publish: Publish?
    private let followed: (@Sendable () async -> Bool)?

    /// Events that go to `publish` (the worker's log of the job; a test's recorder); `followed` tells whether a client
    /// follows the job now (nil: always, as for a test's recorder).
    public init(followed: (@Sendable () async -> Bool)? = nil, _ publish: @escaping Publish) {
        self.publish = publish
        self.followed = followed
    }

    private init() {
        self.publish = nil
        self.followed = nil
    }

    /// Events that go nowhere: kinds without `events: true`, and handlers run outside a worker.
    public static let discarding = JobEvents()

    /// Whether anything keeps what is published (a handler can skip building events when not).
    public var isRecording: Bool { publish != nil }

    /// Whether a client follows the job's events right now (its event stream is open, or was): output that costs
    /// something to produce as it goes (a streamed model answer) is worth it only then. One Redis read.
    public func hasFollowers() async -> Bool {
        guard publish != nil else { return false }
        return await followed?() ?? true
    }

    /// The next piece of the text the job produces (appended, in order, to what came before).
    public func delta(_ text: String) async {
        guard !text.isEmpty else { return }
        await publish?("delta", [("text", text)])
    }

    /// A step the job passed, named by a short fixed word (`image_received`, `model_asked`, `answer_parsed`).
    public func progress(_ step: String) async {
        await publish?("progress", [("step", step)])
    }
}
