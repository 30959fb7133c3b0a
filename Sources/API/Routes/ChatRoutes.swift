import Foundation
import Hummingbird
import JSON
import JobContracts
import Outbox
import Postgres
import Queue
import Store

/// `chat` (seed 001): the message is counted against the day's limit (the user's time zone; none left:
/// `CHAT_LIMIT_REACHED`), then a `chat` job asks the AI; the answer comes like `analyze`'s (200 within the short
/// wait, else 202 with the job; with an `Idempotency-Key`, a retry answers with the first request's job and counts
/// nothing more). `chat/history`: the caller's conversation, newest first.
struct ChatRoutes {
    let database: PostgresClient
    /// Where `chat/history` reads.
    let reads: ReadRouting
    let queue: JobQueue
    let waiter: JobWaiter
    let authenticator: Authenticator
    let settings: ResultSettings
    let idempotency: IdempotentRequests

    static let maxMessageLength = 1000

    func register(on api: RouteTable) {
        api.post("chat", send)
        api.get("chat/history", history)
    }

    /// The 200 of an answered chat, for `POST chat` and for `GET jobs/{id}` alike (the stored result without its
    /// history row id).
    struct Answer: Encodable {
        var response: String
        var messageType: String
        var followUpQuestions: [String]
        var usage: ChatContract.Usage

        init(_ stored: ChatContract.Result, usage: ChatContract.Usage) {
            self.response = stored.response
            self.messageType = stored.messageType
            self.followUpQuestions = stored.followUpQuestions
            self.usage = usage
        }
    }

    func send(_ request: Request, _ context: APIContext) async throws -> Response {
        let user = try await authenticator.caller(request).user
        struct Body: Decodable { var message: String }
        let body = try await JSONBody.decode(Body.self, from: request, allowedKeys: ["message"])
        let message = try Field.text(body.message, "message", max: Self.maxMessageLength, required: true)!
        let key: IdempotentRequests.Key?
        switch try await idempotency.start(request, userID: user.id, route: "chat", fingerprint: Array(message.utf8)) {
        case .job(let id): return try await answer(request, job: id, user: user, used: nil)
        case .replay(let response): return response
        case .owner(let owned): key = owned
        case .unkeyed: key = nil
        }
        do {
            let (id, used) = try await start(message, user: user, key: key, stream: JobAnswer.acceptsEventStream(request))
            return try await answer(request, job: id, user: user, used: used)
        } catch {
            if let key { await idempotency.release(key) }
            throw error
        }
    }

    /// Counts the chat against the day, reserves it and writes its job to the outbox in one transaction (with the
    /// idempotency key's job), then puts the job on its queue: the job, and the day's count with this chat. The queue
    /// charges the chat when the job succeeds and gives it back when the job dies or is cancelled, so a failed chat
    /// costs nothing.
    /// `stream`: the client reads event streams (its `Accept` lists `text/event-stream`), so the job streams the model's
    /// answer as delta events even if its stream opens after the job started.
    private func start(_ message: String, user: User, key: IdempotentRequests.Key?, stream: Bool) async throws -> (JobID, used: Int) {
        let limit = user.tier.chatsPerDay
        let day = UsageCounters.day(of: Date(), in: user.calendarTimeZone)
        let messageID = UUID.randomV4().lowercasedString
        let outbox = JobOutbox(database: database, queue: queue)
        let job = try JobOutbox.Job(
            ChatContract.self,
            ChatContract.Parameters(userId: user.id, messageId: messageID, message: message, stream: stream ? true : nil),
            owner: user.id,
            reservation: QuotaReservation.chat(messageID: messageID).text)
        let taken = try await database.transaction { tx -> Int? in
            guard let used = try await ChatQuota(tx).take(userID: user.id, day: day, limit: limit) else { return nil }
            try await ChatReservations(tx).insert(messageID: messageID, userID: user.id, day: day, jobID: job.id.rawValue)
            try await outbox.add(job, in: tx)
            if let key { try await idempotency.attach(key, job: job.id, in: tx) }
            return used
        }
        guard let used = taken else {
            throw APIError(
                .tooManyRequests, "CHAT_LIMIT_REACHED",
                "You've reached your daily limit of AI chat questions. Upgrade to Pro for unlimited AI assistance!",
                details: [
                    "remainingChats": .int(0), "dailyLimit": limit.map(JSONValue.int) ?? .null,
                    "subscriptionTier": .string(user.tier.rawValue),
                ])
        }
        await outbox.deliver(job)
        return (job.id, used)
    }

    /// Seed 001's answer from the chat job. `used` (the day's count when the chat was taken) stands in for the usage a
    /// job result from before usage was stored lacks; a replay that does not know it reads today's counter.
    private func answer(_ request: Request, job id: JobID, user: User, used: Int?) async throws -> Response {
        if JobAnswer.wantsEventStream(request) {
            // The answer as the model writes it: the job's event stream, in this response.
            let jobs = JobRoutes(database: database, queue: queue, waiter: waiter, authenticator: authenticator, settings: settings)
            var headers = HTTPFields()
            headers[.location] = "\(RouteTable.basePath)/jobs/\(id.rawValue)"
            return jobs.eventStream(of: id, after: nil, headers: headers)
        }
        let limit = user.tier.chatsPerDay
        return try await JobAnswer.respond(request, job: id, waiter: waiter, settings: settings) { record in
            guard let stored = try? record.result(as: ChatContract.self) else {
                throw StoreError("chat job \(id) succeeded without a result")
            }
            var count = used
            if stored.usage == nil, count == nil {
                count = try await ChatQuota(database).used(userID: user.id, day: UsageCounters.day(of: Date(), in: user.calendarTimeZone))
            }
            let taken = count ?? 0
            let usage =
                stored.usage
                ?? .init(remainingChats: limit.map { max(0, $0 - taken) }, totalUsedToday: taken, subscriptionTier: user.tier.rawValue)
            return try Envelope.success(Answer(stored, usage: usage))
        }
    }

    struct Message: Encodable {
        var id: Int64
        var message: String
        var response: String
        var messageType: String
        var createdAt: Date
    }

    struct History: Encodable {
        var messages: [Message]
        var count: Int
    }

    func history(_ request: Request, _ context: APIContext) async throws -> Response {
        let user = try await authenticator.caller(request).user
        let limit = try request.integer("limit", default: 50, in: 1...200)
        let messages = try await ChatMessages(await reads.reader(for: user.id)).history(userID: user.id, limit: limit).map {
            Message(id: $0.id, message: $0.message, response: $0.response, messageType: $0.messageType, createdAt: $0.createdAt)
        }
        return try Envelope.success(History(messages: messages, count: messages.count))
    }
}
