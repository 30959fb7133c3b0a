import Foundation
import HummingbirdTesting
import Postgres
import Store
import Testing

/// `GET meals` (history, pages, the tier's window) and `POST meals/sync` (offline-first delta sync, server wins).
/// Serialized: every `TestAPI.run` opens Postgres connections of its own, and all cases at once exceed the
/// server's `max_connections` (100).
@Suite struct MealsTests {
    // MARK: GET meals

    @Test func historyIsNewestFirst() async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            let now = Date()
            let middle = try await api.insertMeal(userID: account.id, name: "Middle", carbs: 20, at: now - 7200)
            let newest = try await api.insertMeal(userID: account.id, name: "Newest", carbs: 30.5, at: now - 600)
            let oldest = try await api.insertMeal(userID: account.id, name: "Oldest", carbs: 10, at: now - 3 * 86_400)

            let page = try await client.call(.get, "meals", token: account.accessToken)
            #expect(page.status == 200)
            #expect(page.json["success"].bool == true)
            let meals = page.data["meals"].array
            #expect(meals.compactMap { $0["id"].int } == [newest, middle, oldest].map(Int.init))
            #expect(meals.compactMap { $0["name"].string } == ["Newest", "Middle", "Oldest"])
            #expect(meals[0]["carbEstimate"].double == 30.5)
            #expect(meals[0]["createdAt"].string == iso(now - 600))
            #expect(page.data["pagination"]["limit"].int == 20)
            #expect(page.data["pagination"]["offset"].int == 0)
            #expect(page.data["pagination"]["total"].int == 3)
            #expect(page.data["pagination"]["hasMore"].bool == false)
        }
    }

    @Test func pagesThroughTwentyFiveMeals() async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            let now = Date()
            // "Meal 1" is the newest, "Meal 25" the oldest.
            for index in 1...25 {
                try await api.insertMeal(userID: account.id, name: "Meal \(index)", carbs: Double(index), at: now - Double(index) * 60)
            }

            let last = try await client.call(.get, "meals?limit=10&offset=20", token: account.accessToken)
            #expect(last.status == 200)
            #expect(last.data["meals"].array.compactMap { $0["name"].string } == (21...25).map { "Meal \($0)" })
            #expect(last.data["pagination"]["limit"].int == 10)
            #expect(last.data["pagination"]["offset"].int == 20)
            #expect(last.data["pagination"]["total"].int == 25)
            #expect(last.data["pagination"]["hasMore"].bool == false)

            let first = try await client.call(.get, "meals?limit=10&offset=0", token: account.accessToken)
            #expect(first.data["meals"].array.compactMap { $0["name"].string } == (1...10).map { "Meal \($0)" })
            #expect(first.data["pagination"]["total"].int == 25)
            #expect(first.data["pagination"]["hasMore"].bool == true)

            let middle = try await client.call(.get, "meals?limit=10&offset=10", token: account.accessToken)
            #expect(middle.data["meals"].array.compactMap { $0["name"].string } == (11...20).map { "Meal \($0)" })
            #expect(middle.data["pagination"]["hasMore"].bool == true)

            // Past the end: no meals, but the total is still the real count.
            let beyond = try await client.call(.get, "meals?limit=10&offset=30", token: account.accessToken)
            #expect(beyond.status == 200)
            #expect(beyond.data["meals"].array.isEmpty)
            #expect(beyond.data["pagination"]["total"].int == 25)
            #expect(beyond.data["pagination"]["hasMore"].bool == false)

            let all = try await client.call(.get, "meals?limit=100", token: account.accessToken)
            #expect(all.data["meals"].array.count == 25)
            #expect(all.data["pagination"]["limit"].int == 100)
        }
    }

    @Test(arguments: [
        ("limit=0", "limit"), ("limit=101", "limit"), ("limit=abc", "limit"), ("limit=", "limit"), ("offset=-1", "offset"),
        ("limit=10&offset=ten", "offset"),
    ])
    func refusesBadPagingParameters(query: String, parameter: String) async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            let result = try await client.call(.get, "meals?\(query)", token: account.accessToken)
            #expect(result.status == 400)
            #expect(result.errorCode == "VALIDATION_ERROR")
            #expect(result.json["error"]["details"]["field"].string == parameter)
            #expect(result.json["error"]["message"].string?.contains(parameter) == true)
        }
    }

    @Test(arguments: [
        (Tier.free, ["Yesterday"]), (Tier.essentials, ["Yesterday", "Ten days ago"]),
        (Tier.pro, ["Yesterday", "Ten days ago", "Forty days ago"]),
    ])
    func historyWindowFollowsTheTier(tier: Tier, visible: [String]) async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            try await api.setTier(tier, userID: account.id)
            let now = Date()
            try await api.insertMeal(userID: account.id, name: "Forty days ago", carbs: 40, at: now - 40 * 86_400)
            try await api.insertMeal(userID: account.id, name: "Ten days ago", carbs: 10, at: now - 10 * 86_400)
            try await api.insertMeal(userID: account.id, name: "Yesterday", carbs: 1, at: now - 86_400)

            let page = try await client.call(.get, "meals", token: account.accessToken)
            #expect(page.status == 200)
            #expect(page.data["meals"].array.compactMap { $0["name"].string } == visible)
            #expect(page.data["pagination"]["total"].int == visible.count)
        }
    }

    @Test func confidenceLevelIsAStringWithTwoDecimals() async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            let synced = try await client.call(
                .post, "meals/sync", token: account.accessToken,
                json: ["localMeals": [localMeal("conf-1", name: "Toast", confidence: 0.8, createdAt: Date() - 3600)]])
            #expect(synced.status == 200)
            let plain = try await api.insertMeal(userID: account.id, name: "No confidence", carbs: 5, at: Date() - 7200)

            let page = try await client.call(.get, "meals", token: account.accessToken)
            let meals = page.data["meals"].array
            #expect(meals.count == 2)
            #expect(meals[0]["name"].string == "Toast")
            #expect(meals[0]["confidenceLevel"].string == "0.80")
            #expect(meals[0]["localId"].string == "conf-1")
            #expect(meals[1]["id"].int == Int(plain))
            #expect(meals[1]["confidenceLevel"].isNull)
        }
    }

    // MARK: POST meals/sync

    @Test func syncCreatesMealsAndMapsLocalIds() async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            let breakfast = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 - 5 * 3600).rounded())
            let result = try await client.call(
                .post, "meals/sync", token: account.accessToken,
                json: [
                    "localMeals": [
                        localMeal("local-a", name: "Breakfast toast", carbs: 30, confidence: 0.8, createdAt: breakfast),
                        localMeal("local-b", name: "Apple", carbs: 19.5, confidence: nil, createdAt: breakfast + 3600),
                    ]
                ])
            #expect(result.status == 200)
            #expect(result.data["conflictResolution"].string == "server_wins")
            #expect(result.data["serverTimestamp"].string.flatMap(parseISO) != nil)
            // The meals the client just sent are not echoed back as modified.
            #expect(result.data["modifiedMeals"].array.isEmpty)
            let synced = result.data["syncedLocalMeals"].array
            #expect(synced.compactMap { $0["localId"].string } == ["local-a", "local-b"])
            let serverIDs = synced.compactMap { $0["serverId"].int }
            #expect(serverIDs.count == 2)
            #expect(Set(serverIDs).count == 2)

            let rows = try await api.database.query(
                "SELECT id, local_id, name, carb_estimate, confidence_level, created_at FROM meals WHERE user_id = $1 ORDER BY created_at",
                [account.id])
            #expect(rows.count == 2)
            let stored = try rows.map {
                (
                    id: Int(try $0.decode("id", as: Int64.self)), localID: try $0.decode("local_id", as: String.self),
                    name: try $0.decode("name", as: String.self), carbs: try $0.decode("carb_estimate", as: Double.self),
                    confidence: try $0.decode("confidence_level", as: Double?.self), createdAt: try $0.decode("created_at", as: Date.self)
                )
            }
            #expect(stored.map(\.id) == serverIDs)
            #expect(stored.map(\.localID) == ["local-a", "local-b"])
            #expect(stored.map(\.name) == ["Breakfast toast", "Apple"])
            #expect(stored.map(\.carbs) == [30, 19.5])
            #expect(stored.map(\.confidence) == [0.8, nil])
            #expect(stored.map(\.createdAt) == [breakfast, breakfast + 3600])
        }
    }

    @Test func syncIsIdempotentPerLocalIdAndTheServerWins() async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            let createdAt = Date() - 3600
            let first = try await client.call(
                .post, "meals/sync", token: account.accessToken,
                json: ["localMeals": [localMeal("same-1", name: "Original", carbs: 30, createdAt: createdAt)]])
            let serverID = try #require(first.data["syncedLocalMeals"][0]["serverId"].int)

            let again = try await client.call(
                .post, "meals/sync", token: account.accessToken,
                json: ["localMeals": [localMeal("same-1", name: "Edited offline", carbs: 99, createdAt: createdAt)]])
            #expect(again.status == 200)
            #expect(again.data["syncedLocalMeals"][0]["localId"].string == "same-1")
            #expect(again.data["syncedLocalMeals"][0]["serverId"].int == serverID)
            // The server's version comes back so the client can replace its edit.
            let modified = again.data["modifiedMeals"].array
            #expect(modified.compactMap { $0["id"].int } == [serverID])
            #expect(modified.first?["name"].string == "Original")
            #expect(modified.first?["carbEstimate"].double == 30)

            #expect(try await mealCount(api, userID: account.id) == 1)
            let rows = try await api.database.query("SELECT name, carb_estimate FROM meals WHERE id = $1", [Int64(serverID)])
            #expect(try rows[rows.startIndex].decode("name", as: String.self) == "Original")
            #expect(try rows[rows.startIndex].decode("carb_estimate", as: Double.self) == 30)
        }
    }

    @Test func modifiedMealsAreThoseUpdatedAfterTheLastSync() async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            let now = Date()
            let old = try await api.insertMeal(userID: account.id, name: "Old", carbs: 10, at: now - 2 * 3600)
            let recent = try await api.insertMeal(userID: account.id, name: "Recent", carbs: 20, at: now - 300)
            let edited = try await api.insertMeal(userID: account.id, name: "Before edit", carbs: 30, at: now - 3 * 3600)
            try await api.database.execute("UPDATE meals SET name = 'After edit', updated_at = now() WHERE id = $1", [edited])

            let sinceAnHour = try await sync(client, account, lastSync: now - 3600)
            #expect(sinceAnHour.status == 200)
            let modified = sinceAnHour.data["modifiedMeals"].array
            #expect(modified.compactMap { $0["id"].int } == [recent, edited].map(Int.init))
            #expect(modified.compactMap { $0["name"].string } == ["Recent", "After edit"])
            #expect(modified.first?["carbEstimate"].double == 20)
            #expect(modified.first?["createdAt"].string == iso(now - 300))

            let sinceFourHours = try await sync(client, account, lastSync: now - 4 * 3600)
            #expect(
                Set(sinceFourHours.data["modifiedMeals"].array.compactMap { $0["id"].int }) == Set([old, recent, edited].map(Int.init)))

            let everything = try await sync(client, account, lastSync: nil)
            #expect(everything.data["modifiedMeals"].array.count == 3)

            let serverTimestamp = try #require(everything.data["serverTimestamp"].string.flatMap(parseISO))
            let nothingNew = try await sync(client, account, lastSync: serverTimestamp)
            #expect(nothingNew.data["modifiedMeals"].array.isEmpty)
        }
    }

    /// A meal whose transaction started before a sync but committed after it has `updated_at` before that sync's
    /// `serverTimestamp`: the next delta sync (from that timestamp) must still deliver it.
    @Test func syncDoesNotLoseAMealCommittedAfterTheServerTimestamp() async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            let token = account.accessToken
            let userID = account.id
            let during: CallResult = try await api.database.transaction { tx in
                try await tx.execute("INSERT INTO meals (user_id, name, carb_estimate) VALUES ($1, 'Late commit', 25)", [userID])
                return try await client.call(.post, "meals/sync", token: token, json: ["localMeals": [Any]()])
            }
            #expect(during.status == 200)
            #expect(during.data["modifiedMeals"].array.isEmpty)
            let watermark = try #require(during.data["serverTimestamp"].string)

            let next = try await client.call(
                .post, "meals/sync", token: token, json: ["lastSyncTimestamp": watermark, "localMeals": [Any]()])
            #expect(next.status == 200)
            #expect(next.data["modifiedMeals"].array.compactMap { $0["name"].string } == ["Late commit"])
        }
    }

    /// Following `serverTimestamp` from sync to sync must deliver every changed meal, however many there are.
    @Test func modifiedMealsAreNeverSilentlyTruncated() async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            try await api.setTier(.pro, userID: account.id)
            try await api.database.execute(
                """
                INSERT INTO meals (user_id, name, carb_estimate, created_at, updated_at)
                SELECT $1, 'Bulk ' || g, 1, now() - interval '1 hour' + g * interval '1 millisecond',
                       now() - interval '1 hour' + g * interval '1 millisecond'
                FROM generate_series(1, 1001) g
                """,
                [account.id])
            var seen = Set<Int>()
            var lastSync: String?
            for _ in 0..<5 {
                var body: [String: Any] = ["localMeals": [Any]()]
                if let lastSync { body["lastSyncTimestamp"] = lastSync }
                let result = try await client.call(.post, "meals/sync", token: account.accessToken, json: body)
                #expect(result.status == 200)
                let ids = result.data["modifiedMeals"].array.compactMap { $0["id"].int }
                if ids.isEmpty { break }
                seen.formUnion(ids)
                lastSync = result.data["serverTimestamp"].string
            }
            #expect(seen.count == 1001)
        }
    }

    @Test(arguments: [
        // One meal, the seed's example with carbs out of range.
        (
            #"{"localMeals":[{"localId":"a","name":"Toast","carbEstimate":2000,"createdAt":"2025-01-01T08:00:00.000Z"}]}"#,
            "localMeals[0].carbEstimate"
        ),
        // A valid meal first: the second one's fault refuses both.
        (batch(#"{"localId":"b","name":"Toast","carbEstimate":-1,"createdAt":"2025-01-01T08:00:00.000Z"}"#), "localMeals[1].carbEstimate"),
        (batch(#"{"localId":"b","carbEstimate":30,"createdAt":"2025-01-01T08:00:00.000Z"}"#), "localMeals[1].name"),
        (batch(#"{"localId":"b","name":"   ","carbEstimate":30,"createdAt":"2025-01-01T08:00:00.000Z"}"#), "localMeals[1].name"),
        (
            batch(#"{"localId":"b","name":"Toast","carbEstimate":30,"confidenceLevel":1.5,"createdAt":"2025-01-01T08:00:00.000Z"}"#),
            "localMeals[1].confidenceLevel"
        ),
        (batch(#"{"localId":"b","name":"Toast","carbEstimate":30,"createdAt":"yesterday"}"#), "localMeals[1].createdAt"),
        (batch(#"{"localId":"b","name":"Toast","carbEstimate":30,"createdAt":"2999-01-01T00:00:00.000Z"}"#), "localMeals[1].createdAt"),
        (
            batch(#"{"localId":"b","name":"Toast","carbEstimate":"30","createdAt":"2025-01-01T08:00:00.000Z"}"#),
            "localMeals[1].carbEstimate"
        ),
        (batch(#"{"name":"Toast","carbEstimate":30,"createdAt":"2025-01-01T08:00:00.000Z"}"#), "localMeals[1].localId"),
        (batch(#"{"localId":"ok-1","name":"Twin","carbEstimate":30,"createdAt":"2025-01-01T08:00:00.000Z"}"#), "localMeals"),
        (#"{"localMeals":[],"deviceId":"x"}"#, "deviceId"),
        (#"{"localMeals":{"localId":"a"}}"#, "localMeals"),
        (#"{"lastSyncTimestamp":"last tuesday","localMeals":[]}"#, "lastSyncTimestamp"),
    ])
    func syncRefusesTheWholeBatchOnAnyFault(body: String, field: String) async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            let result = try await client.call(
                .post, "meals/sync", token: account.accessToken, body: body, headers: [.contentType: "application/json"])
            #expect(result.status == 400)
            #expect(result.errorCode == "VALIDATION_ERROR")
            #expect(result.json["error"]["details"]["field"].string == field)
            #expect(try await mealCount(api, userID: account.id) == 0)
        }
    }

    @Test func syncTakesAtMostFiveHundredMeals() async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            let createdAt = Date() - 3600
            let tooMany = (0...500).map { localMeal("bulk-\($0)", name: "Meal \($0)", createdAt: createdAt) }
            let refused = try await client.call(.post, "meals/sync", token: account.accessToken, json: ["localMeals": tooMany])
            #expect(refused.status == 400)
            #expect(refused.errorCode == "VALIDATION_ERROR")
            #expect(refused.json["error"]["details"]["field"].string == "localMeals")
            #expect(try await mealCount(api, userID: account.id) == 0)

            let exactly = (0..<500).map { localMeal("bulk-\($0)", name: "Meal \($0)", createdAt: createdAt) }
            let accepted = try await client.call(.post, "meals/sync", token: account.accessToken, json: ["localMeals": exactly])
            #expect(accepted.status == 200)
            #expect(accepted.data["syncedLocalMeals"].array.count == 500)
            #expect(try await mealCount(api, userID: account.id) == 500)
        }
    }

    @Test func concurrentSyncsOfOneLocalIdMakeOneMeal() async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            let token = account.accessToken
            let createdAt = iso(Date() - 600)
            let answers = try await withThrowingTaskGroup(of: CallResult.self) { group in
                for attempt in 0..<8 {
                    group.addTask {
                        try await client.call(
                            .post, "meals/sync", token: token,
                            json: [
                                "localMeals": [
                                    ["localId": "offline-42", "name": "Attempt \(attempt)", "carbEstimate": 42, "createdAt": createdAt]
                                ]
                            ])
                    }
                }
                var answers: [CallResult] = []
                for try await answer in group { answers.append(answer) }
                return answers
            }
            #expect(answers.map(\.status) == Array(repeating: 200, count: 8))
            let serverIDs = answers.compactMap { $0.data["syncedLocalMeals"][0]["serverId"].int }
            #expect(serverIDs.count == 8)
            #expect(Set(serverIDs).count == 1)
            let rows = try await api.database.query("SELECT id, name FROM meals WHERE user_id = $1", [account.id])
            #expect(rows.count == 1)
            #expect(try rows.map { Int(try $0.decode("id", as: Int64.self)) } == [serverIDs[0]])
            let name = try rows[rows.startIndex].decode("name", as: String.self)
            #expect((0..<8).map { "Attempt \($0)" }.contains(name))
        }
    }

    @Test func anotherUserSyncingTheSameLocalIdGetsTheirOwnMeal() async throws {
        try await TestAPI.run { api, client in
            let alice = try await api.register(client)
            let bob = try await api.register(client)
            let createdAt = Date() - 600
            let forAlice = try await client.call(
                .post, "meals/sync", token: alice.accessToken,
                json: ["localMeals": [localMeal("shared-id", name: "Alice's lunch", carbs: 50, createdAt: createdAt)]])
            let forBob = try await client.call(
                .post, "meals/sync", token: bob.accessToken,
                json: ["localMeals": [localMeal("shared-id", name: "Bob's lunch", carbs: 70, createdAt: createdAt)]])
            let aliceID = try #require(forAlice.data["syncedLocalMeals"][0]["serverId"].int)
            let bobID = try #require(forBob.data["syncedLocalMeals"][0]["serverId"].int)
            #expect(aliceID != bobID)
            // Bob's answer carries nothing of Alice's.
            #expect(forBob.data["modifiedMeals"].array.isEmpty)

            let rows = try await api.database.query("SELECT id, user_id, name FROM meals ORDER BY id", [])
            #expect(rows.count == 2)
            let owners = try rows.map {
                (
                    Int(try $0.decode("id", as: Int64.self)), try $0.decode("user_id", as: String.self),
                    try $0.decode("name", as: String.self)
                )
            }
            #expect(owners.contains { $0 == (aliceID, alice.id, "Alice's lunch") })
            #expect(owners.contains { $0 == (bobID, bob.id, "Bob's lunch") })

            let bobsHistory = try await client.call(.get, "meals", token: bob.accessToken)
            #expect(bobsHistory.data["meals"].array.compactMap { $0["id"].int } == [bobID])
        }
    }

    // MARK: Isolation between users

    @Test func anotherUsersDataIsInvisible() async throws {
        try await TestAPI.run { api, client in
            let alice = try await api.register(client)
            let bob = try await api.register(client)
            let now = Date()
            try await api.insertMeal(userID: alice.id, name: "Alice's pasta", carbs: 85, at: now - 60)
            try await api.insertMeal(userID: alice.id, name: "Alice's salad", carbs: 12, at: now - 2 * 86_400)
            try await api.database.execute(
                "INSERT INTO chat_messages (user_id, message, response, message_type) VALUES ($1, 'Carbs in rice?', '45 g', 'carb_lookup')",
                [alice.id])
            try await api.insertMeal(userID: bob.id, name: "Bob's toast", carbs: 15, at: now - 120)

            let meals = try await client.call(.get, "meals", token: bob.accessToken)
            #expect(meals.data["meals"].array.compactMap { $0["name"].string } == ["Bob's toast"])
            #expect(meals.data["pagination"]["total"].int == 1)

            let sync = try await sync(client, bob, lastSync: nil)
            #expect(sync.data["modifiedMeals"].array.compactMap { $0["name"].string } == ["Bob's toast"])

            let insights = try await client.call(.get, "insights", token: bob.accessToken)
            #expect(insights.data["summary"]["monthly"]["mealCount"].int == 1)
            #expect(insights.data["summary"]["monthly"]["totalCarbs"].double == 15)
            #expect(insights.data["highlights"]["highestCarbMeal"]["name"].string == "Bob's toast")
            #expect(insights.data["highlights"]["lowestCarbMeal"]["name"].string == "Bob's toast")

            let stats = try await client.call(.get, "user/stats", token: bob.accessToken)
            #expect(stats.data["allTime"]["mealCount"].int == 1)
            #expect(stats.data["allTime"]["totalCarbs"].double == 15)

            let chat = try await client.call(.get, "chat/history", token: bob.accessToken)
            #expect(chat.status == 200)
            #expect(chat.data["count"].int == 0)
            #expect(chat.data["messages"].array.isEmpty)

            // Alice still sees her own.
            let aliceChat = try await client.call(.get, "chat/history", token: alice.accessToken)
            #expect(aliceChat.data["count"].int == 1)
            let aliceStats = try await client.call(.get, "user/stats", token: alice.accessToken)
            #expect(aliceStats.data["allTime"]["mealCount"].int == 2)
        }
    }
}

// MARK: Helpers

private func iso(_ date: Date) -> String {
    date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: .gmt))
}

private func parseISO(_ text: String) -> Date? {
    try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text)
}

/// One local meal as the app sends it.
private func localMeal(
    _ localId: String, name: String = "Toast", carbs: Double = 30, confidence: Double? = 0.8, createdAt: Date
) -> [String: Any] {
    var meal: [String: Any] = ["localId": localId, "name": name, "carbEstimate": carbs, "createdAt": iso(createdAt)]
    if let confidence { meal["confidenceLevel"] = confidence }
    return meal
}

/// A sync body with a valid meal first and `second` after it.
private func batch(_ second: String) -> String {
    #"{"localMeals":[{"localId":"ok-1","name":"Fine","carbEstimate":30,"createdAt":"2025-01-01T08:00:00.000Z"},"# + second + "]}"
}

private func sync(_ client: any TestClientProtocol, _ account: TestAPI.Account, lastSync: Date?) async throws -> CallResult {
    var body: [String: Any] = ["localMeals": [Any]()]
    if let lastSync { body["lastSyncTimestamp"] = iso(lastSync) }
    return try await client.call(.post, "meals/sync", token: account.accessToken, json: body)
}

private func mealCount(_ api: TestAPI, userID: String) async throws -> Int {
    let rows = try await api.database.query("SELECT count(*) AS n FROM meals WHERE user_id = $1", [userID])
    return try rows[rows.startIndex].decode("n", as: Int.self)
}
