import Foundation
import Hummingbird
import JSON
import Postgres
import Store

/// `meals` (history, limited to the tier's window), `meals/sync` (offline-first delta sync, server wins; with an
/// `Idempotency-Key`, a retry replays the first answer) and `meals/{id}/image` (a meal's photo,
/// `MealsRoutes+Image.swift`).
struct MealsRoutes {
    let database: PostgresClient
    /// Where `GET meals` reads (a replica that has the caller's writes, or the primary).
    let reads: ReadRouting
    let authenticator: Authenticator
    let idempotency: IdempotentRequests
    /// `PHOTO_RETENTION_DAYS`: an image is cached no longer than its photo is kept.
    let photoRetention: Duration

    func register(on api: RouteTable) {
        api.get("meals", list)
        api.post("meals/sync", sync)
        api.get("meals/:id/image", image)
    }

    /// Written straight into the API's encoder as `MealDTO` is (`streamingObject`), else by the keyed containers
    /// (`MealsPageEncodingTests` holds the two to one output): through `Array`'s and the keyed containers, the frame
    /// around a page's 20 meals cost 3.3% of `GET /meals`'s CPU (perf, 2026-11-29).
    struct Page: Encodable {
        struct Pagination: Encodable {
            var limit: Int
            var offset: Int
            var total: Int
            var hasMore: Bool

            enum CodingKeys: String, CodingKey { case limit, offset, total, hasMore }

            func encode(to encoder: any Encoder) throws {
                if let object = encoder.streamingObject() {
                    object.write(CodingKeys.limit.rawValue, limit)
                    object.write(CodingKeys.offset.rawValue, offset)
                    object.write(CodingKeys.total.rawValue, total)
                    object.write(CodingKeys.hasMore.rawValue, hasMore)
                    return
                }
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(limit, forKey: .limit)
                try container.encode(offset, forKey: .offset)
                try container.encode(total, forKey: .total)
                try container.encode(hasMore, forKey: .hasMore)
            }
        }
        var meals: [MealDTO]
        var pagination: Pagination
        /// Meals older than this are outside the tier's history window (absent: unlimited).
        var historyStart: Date?

        enum CodingKeys: String, CodingKey { case meals, pagination, historyStart }

        func encode(to encoder: any Encoder) throws {
            if let object = encoder.streamingObject() {
                try object.write(CodingKeys.meals.rawValue, elements: meals)
                try object.write(CodingKeys.pagination.rawValue, pagination)
                if let historyStart { object.write(CodingKeys.historyStart.rawValue, historyStart) }
                return
            }
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(meals, forKey: .meals)
            try container.encode(pagination, forKey: .pagination)
            try container.encodeIfPresent(historyStart, forKey: .historyStart)
        }
    }

    func list(_ request: Request, _ context: APIContext) async throws -> Response {
        // Who calls, from the session cache; the account (its tier, and that it and the sign-in still exist) is read
        // in the page's own statement: one query per request. On a read replica that check may be as late as the lag
        // bound (DATABASE_READ_MAX_LAG_SECONDS): a sign-in revoked moments ago by another process may still read its
        // meals for that long, which the session cache allows for as long already (SESSION_CACHE_SECONDS). A sign-out
        // through this API marks the user's write, and their reads go to the primary until a replica has it.
        let principal = try await authenticator.principal(request)
        let limit = try request.integer("limit", default: 20, in: 1...100)
        let offset = try request.integer("offset", default: 0, in: 0...1_000_000)
        guard
            let (since, meals, total) = try await Meals(await reads.reader(for: principal.userID)).page(
                ofUser: principal.userID, liveSession: principal.sessionID, now: Date(), limit: limit, offset: offset)
        else { throw authenticator.signedOut(principal) }
        return try Envelope.success(
            Page(
                meals: meals.map(MealDTO.init),
                pagination: .init(limit: limit, offset: offset, total: total, hasMore: offset + meals.count < total),
                historyStart: since))
    }

    static func historyStart(for tier: Tier, now: Date = Date()) -> Date? {
        tier.historyDays.map { now.addingTimeInterval(-Double($0) * 86_400) }
    }

    struct SyncBody: Decodable, NullableMembers {
        static let nullableMembers: Set = ["lastSyncTimestamp", "localMeals"]
        struct Local: Decodable, NullableMembers {
            static let nullableMembers: Set = ["confidenceLevel"]
            var localId: String
            var name: String
            var carbEstimate: Double
            var confidenceLevel: Double?
            var createdAt: Date
        }
        var lastSyncTimestamp: Date?
        var localMeals: [Local]?
    }

    struct SyncResult: Encodable {
        struct Synced: Encodable {
            var localId: String
            var serverId: Int64
        }
        var modifiedMeals: [MealDTO]
        var syncedLocalMeals: [Synced]
        /// Send as `lastSyncTimestamp` next time.
        var serverTimestamp: Date
        /// More changes wait: sync again from `serverTimestamp`.
        var hasMore: Bool
        var conflictResolution = "server_wins"
    }

    static let maxLocalMeals = 500
    static let maxModifiedMeals = 1000

    func sync(_ request: Request, _ context: APIContext) async throws -> Response {
        let caller = try await authenticator.caller(request)
        let body = try await JSONBody.decode(SyncBody.self, from: request, allowedKeys: ["lastSyncTimestamp", "localMeals"])
        let locals = body.localMeals ?? []
        guard locals.count <= Self.maxLocalMeals else {
            throw APIError.validation("localMeals", "at most \(Self.maxLocalMeals) local meals per sync")
        }
        let now = Date()
        // Everything is checked before anything is written: one bad meal refuses the whole sync.
        let meals: [LocalMeal] = try locals.enumerated().map { index, local in
            let at = "localMeals[\(index)]"
            guard local.createdAt <= now.addingTimeInterval(86_400) else {
                throw APIError.validation("\(at).createdAt", "field '\(at).createdAt' is in the future")
            }
            return LocalMeal(
                localId: try Field.text(local.localId, "\(at).localId", max: 100, required: true)!,
                name: try Field.text(local.name, "\(at).name", max: 200, required: true)!,
                carbEstimate: try Field.number(local.carbEstimate, "\(at).carbEstimate", in: 0...1000)!,
                confidenceLevel: try Field.number(local.confidenceLevel, "\(at).confidenceLevel", in: 0...1),
                createdAt: local.createdAt)
        }
        if Set(meals.map(\.localId)).count != meals.count {
            throw APIError.validation("localMeals", "localId values must be unique within one sync")
        }
        let fields: [String?] = meals.flatMap { meal -> [String?] in
            [meal.localId, meal.name, "\(meal.carbEstimate)", meal.confidenceLevel.map { "\($0)" }, Timestamp.format(meal.createdAt)]
        }
        let fingerprint = IdempotentRequests.fingerprint([body.lastSyncTimestamp.map(Timestamp.format)] + fields)
        switch try await idempotency.start(request, userID: caller.user.id, route: "meals/sync", fingerprint: fingerprint) {
        case .job, .unkeyed:
            return Envelope.response(
                status: .ok, body: try await sync(meals, since: body.lastSyncTimestamp, user: caller.user), headers: [:])
        case .replay(let response):
            return response
        case .owner(let key):
            do {
                let answer = try await sync(meals, since: body.lastSyncTimestamp, user: caller.user)
                try await idempotency.complete(key, status: .ok, body: answer)
                return Envelope.response(status: .ok, body: answer, headers: [:])
            } catch {
                await idempotency.release(key)
                throw error
            }
        }
    }

    /// Stores the local meals (all or none) and answers with the changes since `since`: the answer's bytes.
    private func sync(_ meals: [LocalMeal], since: Date?, user: User) async throws -> [UInt8] {
        let synced = try await database.transaction { tx in
            var synced: [(SyncResult.Synced, inserted: Bool)] = []
            for meal in meals {
                let (id, inserted) = try await Meals(tx).upsertLocal(userID: user.id, meal)
                synced.append((.init(localId: meal.localId, serverId: id), inserted))
            }
            return synced
        }
        // The client already has the meals it just sent; a localId the server knew comes back in the server's version.
        let justSynced = Set(synced.filter(\.inserted).map(\.0.serverId))
        let changes = try await Meals(database).changes(
            userID: user.id, since: since, windowStart: Self.historyStart(for: user.tier), limit: Self.maxModifiedMeals)
        return try Envelope.successBytes(
            SyncResult(
                modifiedMeals: changes.meals.filter { !justSynced.contains($0.id) }.map(MealDTO.init),
                syncedLocalMeals: synced.map(\.0), serverTimestamp: changes.next, hasMore: changes.hasMore))
    }
}
