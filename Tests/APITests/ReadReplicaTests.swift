import Foundation
import HummingbirdTesting
import Postgres
import Queue
import TestSupport
import Testing

/// `DATABASE_READ_URL`: the API's reads on a real streaming replica (`ops/replica.sh`, replaying 2 s behind), and
/// read-your-writes: a user who just wrote reads from the primary until the replica has their write, while everyone
/// else reads the replica.
@Suite(.enabled(if: TestServices.replicaURL != nil, "needs ops/replica.sh's replica (CARBSCAN_REPLICA_URL)"))
struct ReadReplicaTests {
    @Test func aUserReadsTheMealTheyJustSyncedWhileOthersReadTheReplica() async throws {
        try await TestAPI.run(replica: TestServices.replicaURL) { api, client in
            let replicas = try #require(api.replicas)
            let writer = try await api.register(client)
            let other = try await api.register(client)
            // Registering marked both: once the replica has that, either's reads may go there.
            try await TestAPI.waitForReplay(of: api.database, on: replicas.replicas[0].client)
            try await waitUntilUsable(replicas)

            let synced = try await client.call(
                .post, "meals/sync", token: writer.accessToken,
                json: ["localMeals": [["localId": "l-1", "name": "Rice", "carbEstimate": 45, "createdAt": iso(Date() - 60)]]])
            #expect(synced.status == 200, "\(synced.text)")
            let before = RoutedReads(replicas)
            let page = try await client.call(.get, "meals", token: writer.accessToken)
            // The replica lacks the meal yet: read there, the page would have been empty.
            let onReplica: Int? = try await replicas.replicas[0].client.query(
                "SELECT count(*) AS n FROM meals WHERE user_id = $1", [writer.id]
            ).first?.decode("n")
            #expect(onReplica == 0, "the replica replayed the sync before the test could read: no lag was seen")
            #expect(page.status == 200)
            #expect(page.data["meals"].array.compactMap { $0["name"].string } == ["Rice"])
            let othersPage = try await client.call(.get, "meals", token: other.accessToken)
            #expect(othersPage.status == 200)
            let after = RoutedReads(replicas)
            #expect(after.ownWrite == before.ownWrite + 1)
            #expect(after.fresh == before.fresh + 1)

            // Once the replica has replayed the write, the writer reads it there too.
            try await TestAPI.waitForReplay(of: api.database, on: replicas.replicas[0].client)
            await replicas.checkNow()
            let later = try await client.call(.get, "meals", token: writer.accessToken)
            #expect(later.data["meals"].array.compactMap { $0["name"].string } == ["Rice"])
            #expect(RoutedReads(replicas).fresh == after.fresh + 1)
        }
    }

    /// The worker wrote the user's rows before the job finished; the API handing the user the job's end marks them, so
    /// what the job wrote is in their next read.
    @Test func aJobResultHandedToTheUserMarksThem() async throws {
        try await TestAPI.run(replica: TestServices.replicaURL) { api, client in
            let replicas = try #require(api.replicas)
            let user = try await api.register(client)
            let enqueued = try await api.queue.enqueue("noop", payload: ["sleepMs": 0], options: EnqueueOptions(owner: user.id))
            let id = try #require(enqueued.id)
            try await TestAPI.waitForReplay(of: api.database, on: replicas.replicas[0].client)
            try await waitUntilUsable(replicas)
            // As the job would: a row of the user's, written on the primary without any request of theirs.
            _ = try await api.insertMeal(userID: user.id, name: "From the job", carbs: 12, at: Date() - 30)
            let (_, worker) = api.startWorker(queue: "default")
            defer { worker.cancel() }
            let finished = try await client.call(.get, "jobs/\(id.rawValue)?wait=10", token: user.accessToken)
            #expect(finished.data["status"].string == "succeeded", "\(finished.text)")

            let before = RoutedReads(replicas)
            let page = try await client.call(.get, "meals", token: user.accessToken)
            #expect(page.data["meals"].array.compactMap { $0["name"].string } == ["From the job"])
            #expect(RoutedReads(replicas).ownWrite == before.ownWrite + 1)
        }
    }

    /// A meal's photo is served from the replica once it has replayed it (and the owner's writes).
    @Test func aMealsPhotoIsServedFromTheReplica() async throws {
        try await TestAPI.run(replica: TestServices.replicaURL) { api, client in
            let replicas = try #require(api.replicas)
            let user = try await api.register(client)
            let photo = AnalyzeRoutesTests.jpeg
            let (meal, _) = try await MealImageTests.mealWithPhoto(api, userID: user.id, bytes: photo)
            try await TestAPI.waitForReplay(of: api.database, on: replicas.replicas[0].client)
            try await waitUntilUsable(replicas)
            let before = RoutedReads(replicas)
            let answer = try await MealImageTests.fetch(client, MealImageTests.path(ofMeal: meal), token: user.accessToken)
            #expect(answer.status == 200)
            #expect(answer.bytes == photo)
            #expect(RoutedReads(replicas).fresh == before.fresh + 1)
        }
    }

    /// A replica where nothing listens is never read: every read goes to the primary, without an error.
    @Test func aDownReplicaIsSkipped() async throws {
        let nowhere = "postgres://postgres@127.0.0.1:\(PrivateRedis.freeLoopbackPort())/carbscan"
        try await TestAPI.run(replica: nowhere) { api, client in
            let replicas = try #require(api.replicas)
            let user = try await api.register(client)
            _ = try await api.insertMeal(userID: user.id, name: "Soup", carbs: 20, at: Date() - 30)
            await replicas.checkNow()
            #expect(!replicas.replicas[0].currentHealth.isHealthy)
            let before = RoutedReads(replicas)
            for path in ["meals", "insights", "user/stats", "chat/history", "subscriptions/status"] {
                let answer = try await client.call(.get, path, token: user.accessToken)
                #expect(answer.status == 200, "\(path): \(answer.text)")
            }
            #expect(RoutedReads(replicas).unhealthy == before.unhealthy + 5)
            #expect(RoutedReads(replicas).fresh == before.fresh)
        }
    }

    /// Without replicas nothing is marked: no Redis key, whatever the user writes.
    @Test func withoutReplicasNothingIsMarked() async throws {
        try await TestAPI.run { api, client in
            let user = try await api.register(client)
            let synced = try await client.call(.post, "meals/sync", token: user.accessToken, json: ["localMeals": []])
            #expect(synced.status == 200)
            let keys = try await api.queue.redis.send(["KEYS", "\(api.queue.options.prefix):wrote:*"]).array ?? []
            #expect(keys.isEmpty)
        }
    }

    private func waitUntilUsable(_ replicas: PostgresReadReplicas) async throws {
        let usable = try await eventually(timeout: .seconds(20)) {
            await replicas.checkNow()
            return replicas.replicas.allSatisfy { $0.currentHealth.isHealthy }
        }
        guard usable else { throw TestSetupError("the replica never became usable: \(replicas.replicas[0].currentHealth.state)") }
    }
}

/// The routed-read counters of a replica set.
struct RoutedReads {
    var fresh: Int
    var ownWrite: Int
    var unhealthy: Int

    init(_ replicas: PostgresReadReplicas) {
        fresh = replicas.routedReads(to: .replica, because: .fresh)
        ownWrite = replicas.routedReads(to: .primary, because: .ownWrite)
        unhealthy = replicas.routedReads(to: .primary, because: .unhealthy)
    }
}

private func iso(_ date: Date) -> String {
    date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: .gmt))
}
