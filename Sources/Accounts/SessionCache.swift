import Foundation
import Synchronization

/// Access tokens this process verified recently, and whose they are, so a request that only needs to know who
/// calls skips the JWT check and the session query (over half of such a request's cost in ops/bench/api.sh).
/// Only the identity is kept, never the account: tier, time zone and quota are always read from the database.
///
/// An entry lives `ttl` at most and never past its token's expiry. Revoking a sign-in or deleting an account
/// forgets its entries here at once and tells the other API processes through `publish` (the API wires it to
/// a Redis channel; each process forgets what it hears, and everything when it resubscribes). So a revoked
/// token stops working everywhere as soon as the message arrives, and within `ttl` if it is lost.
package final class SessionCache: Sendable {
    package typealias Publisher = @Sendable (String) async -> Void

    private struct Entry {
        var userID: String
        var session: UUID
        var tokenExpiry: Date
        var freshUntil: ContinuousClock.Instant
    }

    private struct State {
        var entries: [String: Entry] = [:]
        /// Bumped by every forget: a lookup that started before one does not store what it read.
        var generation: UInt64 = 0
        var publish: Publisher?
    }

    package let ttl: Duration
    package let capacity: Int
    private let state = Mutex(State())

    /// - Parameter ttl: zero disables the cache (every request is checked against the database).
    package init(ttl: Duration, capacity: Int = 10_000) {
        self.ttl = ttl
        self.capacity = capacity
    }

    /// Sets how revocations reach the other processes (a message `session <uuid>` or `user <id>`).
    package func setPublisher(_ publish: @escaping Publisher) {
        state.withLock { $0.publish = publish }
    }

    var generation: UInt64 { state.withLock { $0.generation } }

    func lookup(_ token: String, now: Date = Date()) -> (userID: String, sessionID: UUID)? {
        guard ttl > .zero else { return nil }
        let clock = ContinuousClock.now
        return state.withLock { state in
            guard let entry = state.entries[token] else { return nil }
            guard entry.freshUntil > clock, entry.tokenExpiry > now else {
                state.entries[token] = nil
                return nil
            }
            return (entry.userID, entry.session)
        }
    }

    /// Remembers a verified token, unless something was forgotten since `generation` was read.
    func store(_ token: String, userID: String, session: UUID, tokenExpiry: Date, generation: UInt64) {
        guard ttl > .zero else { return }
        let now = ContinuousClock.now
        state.withLock { state in
            guard state.generation == generation else { return }
            if state.entries.count >= capacity {
                state.entries = state.entries.filter { $0.value.freshUntil > now }
                if state.entries.count >= capacity { state.entries.removeAll(keepingCapacity: true) }
            }
            state.entries[token] = Entry(userID: userID, session: session, tokenExpiry: tokenExpiry, freshUntil: now + ttl)
        }
    }

    /// Forgets a revoked sign-in here and in every process that hears the message.
    func revoked(session: UUID) async {
        forget(session: session)
        await publish("session \(session.uuidString.lowercased())")
    }

    /// Forgets a sign-in here only (found revoked in the database, so every process that asks finds out too).
    func forget(session: UUID) {
        forget(.session(session))
    }

    /// Forgets a deleted account here and in every process that hears the message.
    func removed(userID: String) async {
        forget(.user(userID))
        await publish("user \(userID)")
    }

    /// Applies a message from another process (`session <uuid>`, `user <id>`); anything else forgets everything.
    package func forget(message: String) {
        let parts = message.split(separator: " ", maxSplits: 1).map(String.init)
        switch (parts.first, parts.count == 2 ? parts[1] : nil) {
        case ("session", let id?): forget(UUID(uuidString: id).map(Forgotten.session) ?? .all)
        case ("user", let id?): forget(.user(id))
        default: forget(.all)
        }
    }

    /// Forgets every entry (a process that may have missed messages, e.g. after resubscribing).
    package func forgetAll() {
        forget(.all)
    }

    private enum Forgotten {
        case session(UUID)
        case user(String)
        case all
    }

    private func forget(_ what: Forgotten) {
        state.withLock { state in
            state.generation += 1
            switch what {
            case .session(let id): state.entries = state.entries.filter { $0.value.session != id }
            case .user(let id): state.entries = state.entries.filter { $0.value.userID != id }
            case .all: state.entries.removeAll()
            }
        }
    }

    package var count: Int { state.withLock { $0.entries.count } }

    private func publish(_ message: String) async {
        guard let publish = state.withLock({ $0.publish }) else { return }
        await publish(message)
    }
}
