import Foundation
import JSON
import JobContracts
import Postgres
import Queue
import Store
import TestSupport
import Testing

@testable import Workers

/// The AI jobs' answers are written by a group commit: chats ending together share a statement, each keeps its own
/// row and usage, a re-delivery finds its row, and a row Postgres refuses fails only its own job.
@Suite struct AnswerBatchTests {
    static func settings(_ server: OpenAIServer) -> WorkerSettings {
        WorkerSettings(aiBaseURL: server.baseURL, aiAPIKey: "sk-test-secret-key", aiModel: "gpt-4o-mini")
    }

    /// A chat message as `POST /chat` leaves it: its chat counted on the user's day and reserved for job `id`.
    static func reservedChat(_ env: WorkerTestEnvironment, _ user: User, day: String, job id: JobID) async throws -> ChatContract.Parameters
    {
        let messageID = UUID().uuidString.lowercased()
        _ = try await ChatQuota(env.database).take(userID: user.id, day: day, limit: nil)
        try await ChatReservations(env.database).insert(messageID: messageID, userID: user.id, day: day, jobID: id.rawValue)
        return ChatContract.Parameters(userId: user.id, messageId: messageID, message: "Carbs in \(id.rawValue.prefix(4))?")
    }

    /// Twelve chats of three users end together: every one is stored once, through the handler's group commit, and
    /// reports its own user's usage of the day; replayed, two of them find their rows and a third new one is added.
    @Test func chatsEndingTogetherAreStoredOnceEachWithTheirOwnUsage() async throws {
        let server = try await OpenAIServer.start(fallback: .json(AIJobsTests.chatAnswer))
        defer { server.stop() }
        try await WorkerTestEnvironment.run { env in
            let users = [try await env.createUser(), try await env.createUser(tier: .pro), try await env.createUser()]
            let day = ISO8601DateFormatter.string(from: Date(), timeZone: .gmt, formatOptions: [.withFullDate])
            var chats: [(JobID, ChatContract.Parameters)] = []
            for index in 0..<12 {
                let id = JobID.random()
                chats.append((id, try await Self.reservedChat(env, users[index % 3], day: day, job: id)))
            }
            let job = ChatJob(services: env.services(Self.settings(server)))
            let results = try await withThrowingTaskGroup(of: (Int, ChatContract.Result?).self) { group in
                for (index, (id, parameters)) in chats.enumerated() {
                    group.addTask {
                        (index, try await job.run(parameters, context: JobContext(id: id, kind: "chat", attempt: 1, maxAttempts: 3)))
                    }
                }
                return try await group.reduce(into: [Int: ChatContract.Result]()) { $0[$1.0] = $1.1 }
            }
            #expect(results.count == 12 && Set(results.values.map(\.messageId)).count == 12)
            for (index, result) in results {
                #expect(result.usage?.totalUsedToday == 4, "chat \(index): \(String(describing: result.usage))")
            }
            #expect(job.answers.stats.items == 12)
            let replayed = try await withThrowingTaskGroup(of: Int64?.self) { group in
                for (id, parameters) in chats.prefix(2) {
                    group.addTask {
                        try await job.run(parameters, context: JobContext(id: id, kind: "chat", attempt: 2, maxAttempts: 3))?.messageId
                    }
                }
                return try await group.reduce(into: Set<Int64?>()) { $0.insert($1) }
            }
            #expect(replayed == Set([results[0]?.messageId, results[1]?.messageId]))
            #expect(try await env.database.query("SELECT count(*) AS n FROM chat_messages")[0].decode("n", as: Int.self) == 12)
        }
    }

    /// In one batch: an answer of a user deleted meanwhile (the foreign key refuses it), the same job twice, and an
    /// answer already stored. The statement fails as a whole, each is written again alone: only the deleted user's
    /// job fails; the twin and the re-delivery get the row their job wrote.
    @Test func aRefusedRowFailsOnlyItsOwnChat() async throws {
        try await WorkerTestEnvironment.run { env in
            let user = try await env.createUser()
            func answer(_ id: JobID, user: String) -> NewChatAnswer {
                NewChatAnswer(
                    userID: user, jobID: id.rawValue, messageID: UUID().uuidString.lowercased(), message: "Carbs in rice?",
                    response: "About 28 g per 100 g.", messageType: "carb_lookup", followUps: [])
            }
            let stored = JobID.random()
            let first = try await ChatMessages(env.database).insertMany([answer(stored, user: user.id)])[0]
            let gate = AsyncStream<Void>.makeStream()
            let writer = GroupCommit<NewChatAnswer, StoredChatAnswer>(database: env.database) { answers, db in
                if answers.first?.message == "hold" { for await _ in gate.stream { break } }
                return try await ChatMessages(db).insertMany(answers)
            }
            var held = answer(.random(), user: user.id)
            held.message = "hold"
            let holding = Task { [held] in try await writer.submit(held) }
            let twin = JobID.random()
            let batch = [
                answer(twin, user: user.id), answer(.random(), user: "deleted-user"), answer(twin, user: user.id),
                answer(stored, user: user.id),
            ]
            let tasks = batch.map { answer in Task { try await writer.submit(answer) } }
            while writer.waiting < 4 { try await Task.sleep(for: .milliseconds(5)) }
            gate.continuation.yield()
            _ = try await holding.value
            let twinID = try await tasks[0].value.id
            await #expect(throws: PostgresError.self) { try await tasks[1].value }
            #expect(try await tasks[2].value.id == twinID)
            #expect(try await tasks[3].value.id == first.id)
            #expect(writer.stats.largest == 4)
            #expect(try await env.database.query("SELECT count(*) AS n FROM chat_messages")[0].decode("n", as: Int.self) == 3)
        }
    }

    /// Meals the same way: one statement for several analyses, the ids in order, a re-delivered job's meal found, a job twice
    /// in one statement written once.
    @Test func mealsAreWrittenManyToAStatementOncePerJob() async throws {
        try await WorkerTestEnvironment.run { env in
            let user = try await env.createUser()
            let photo = try await MealPhotos(env.database).insert(
                userID: user.id, contentType: "image/jpeg", bytes: [0xFF, 0xD8, 0xFF, 0xE0])
            func meal(_ id: JobID, carbs: Double) -> NewAnalyzedMeal {
                NewAnalyzedMeal(
                    userID: user.id, jobID: id.rawValue, photoID: photo,
                    meal: AnalyzedMeal(
                        name: "Rice", carbEstimate: carbs, confidenceLow: 0, confidenceHigh: 1000, confidenceLevel: 0.5, analysis: "x"))
            }
            let (a, b, c) = (JobID.random(), JobID.random(), JobID.random())
            let firstIDs = try await Meals(env.database).insertMany([meal(a, carbs: 10.5), meal(b, carbs: 20.25)])
            let ids = try await Meals(env.database).insertMany([meal(c, carbs: 30), meal(a, carbs: 99)])
            #expect(ids[1] == firstIDs[0])
            let carbs = try await env.database.query("SELECT job_id::text AS job, carb_estimate FROM meals ORDER BY id").map {
                (try $0.decode("job", as: String.self), try $0.decode("carb_estimate", as: Double.self))
            }
            #expect(carbs.map(\.0) == [a.rawValue, b.rawValue, c.rawValue])
            #expect(carbs.map(\.1) == [10.5, 20.25, 30])
            // One job twice in one statement (a twin delivery ending with it): one meal, its id for both.
            let d = JobID.random()
            let twins = try await Meals(env.database).insertMany([meal(d, carbs: 40), meal(d, carbs: 41)])
            #expect(twins[0] == twins[1])
            #expect(try await env.database.query("SELECT count(*) AS n FROM meals")[0].decode("n", as: Int.self) == 4)
        }
    }
}
