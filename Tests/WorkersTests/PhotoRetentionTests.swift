import Foundation
import Postgres
import Queue
import Store
import Testing
import Workers

/// photo-retention through a real worker: old photos go in batches, recent ones and meals stay.
@Suite struct PhotoRetentionTests {
    @Test func deletesOldPhotosInBatchesAndKeepsMeals() async throws {
        try await WorkerTestEnvironment.run { env in
            let user = try await env.createUser().id
            // 2,500 photos 40 days old (three batches of 1,000), 3 from yesterday.
            try await env.database.execute(
                """
                INSERT INTO meal_photos (user_id, content_type, byte_size, bytes, created_at)
                SELECT $1, 'image/jpeg', 3, '\\xffd8ff'::bytea, now() - interval '40 days' - n * interval '1 second'
                FROM generate_series(1, 2500) n
                """, [user])
            try await env.database.execute(
                """
                INSERT INTO meal_photos (user_id, content_type, byte_size, bytes, created_at)
                SELECT $1, 'image/png', 3, '\\x89504e'::bytea, now() - interval '1 day' FROM generate_series(1, 3)
                """, [user])
            let oldPhoto: Int64 = try await env.database.query("SELECT min(id) AS id FROM meal_photos")[0].decode("id")
            let recentPhoto: Int64 = try await env.database.query("SELECT max(id) AS id FROM meal_photos")[0].decode("id")
            for photo in [oldPhoto, recentPhoto] {
                try await env.database.execute(
                    "INSERT INTO meals (user_id, photo_id, name, carb_estimate) VALUES ($1, $2, 'Toast', 30)", [user, photo])
            }
            // An old photo whose analysis is still pending keeps its reservation (and so its release).
            let pending: Int64 = try await env.database.query("SELECT id FROM meal_photos ORDER BY id LIMIT 1 OFFSET 1")[0].decode("id")
            try await ScanReservations(env.database).insert(photoID: pending, userID: user, jobID: JobID.random().rawValue)

            let (worker, task) = env.startWorker(settings: WorkerSettings(photoRetention: .seconds(30 * 86_400)), concurrency: 2)
            guard case .enqueued(let id) = try await env.queue.enqueue("photo-retention", payload: .object([:])) else {
                Issue.record("not enqueued")
                return
            }
            let result = try await env.result(of: id)
            #expect(result["photosDeleted"] == .int(2499))
            #expect(result["batches"] == .int(3))
            let left: [Int64] = try await env.database.query("SELECT id FROM meal_photos ORDER BY id").map { try $0.decode("id") }
            #expect(left.count == 4)
            #expect(left.contains(pending) && left.contains(recentPhoto))
            let meals: [Int64?] = try await env.database.query("SELECT photo_id FROM meals ORDER BY id").map { try $0.decode("photo_id") }
            #expect(meals == [nil, recentPhoto])
            #expect(try await ScanReservations(env.database).status(photoID: pending) == "reserved")
            // A second run finds nothing.
            guard case .enqueued(let again) = try await env.queue.enqueue("photo-retention", payload: .object([:])) else { return }
            #expect(try await env.result(of: again)["photosDeleted"] == .int(0))
            worker.stop()
            try await task.value
        }
    }
}

/// The queue settles what a job holds as the job ends; only a job lost with Redis's data (no record, not in the
/// outbox) leaves its reservation open, and the ledger's leader task releases it after an hour.
@Suite struct LostJobReservationTests {
    @Test func reservationsOfJobsGoneWithoutAnEndAreReleasedOnceAndLiveOnesKept() async throws {
        try await WorkerTestEnvironment.run { env in
            let user = try await env.createUser()
            try await env.database.execute("UPDATE users SET remaining_scans = 0 WHERE id = $1", [user.id])
            func reservedPhoto(hoursAgo: Double, job: JobID) async throws -> Int64 {
                let photo = try await MealPhotos(env.database).insert(
                    userID: user.id, contentType: "image/jpeg", bytes: [0xFF, 0xD8, 0xFF])
                try await ScanReservations(env.database).insert(photoID: photo, userID: user.id, jobID: job.rawValue)
                try await env.database.execute(
                    "UPDATE scan_reservations SET created_at = now() - $2::float8 * interval '1 hour' WHERE photo_id = $1",
                    [photo, hoursAgo])
                return photo
            }
            // A job that is still queued (its workers are down): keeps the scan.
            let queued = try #require(
                try await env.queue.enqueue(
                    "analysis", payload: ["userId": .string(user.id), "photoId": "1"], options: .init(indexed: true)
                )
                .id)
            let waiting = try await reservedPhoto(hoursAgo: 3, job: queued)
            // A job whose record is gone (Redis lost it): released.
            let vanished = try await reservedPhoto(hoursAgo: 3, job: .random())
            // A job still in the outbox (the relay has not run): kept.
            let outboxed = JobID.random()
            try await env.database.execute(
                "INSERT INTO job_outbox (job_id, kind, payload) VALUES ($1::uuid, 'analysis', '{}')", [outboxed.rawValue])
            let inOutbox = try await reservedPhoto(hoursAgo: 3, job: outboxed)
            // Too recent to judge: kept.
            let recent = try await reservedPhoto(hoursAgo: 0.2, job: .random())

            let ledger = QuotaLedger(database: env.database)
            #expect(try await ledger.releaseLost(queue: env.queue) == 1)
            #expect(try await ledger.releaseLost(queue: env.queue) == 0)
            let reservations = ScanReservations(env.database)
            #expect(try await reservations.status(photoID: waiting) == "reserved")
            #expect(try await reservations.status(photoID: vanished) == "refunded")
            #expect(try await reservations.status(photoID: inOutbox) == "reserved")
            #expect(try await reservations.status(photoID: recent) == "reserved")
            let remaining: Int = try await env.database.query("SELECT remaining_scans FROM users WHERE id = $1", [user.id])[0].decode(0)
            #expect(remaining == 1)
        }
    }
}
