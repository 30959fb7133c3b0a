import Foundation
import HTTPTypes
import Hummingbird
import JobContracts
import Outbox
import Postgres
import Queue
import Store

/// `POST analyze` (seed 001): the photo is stored in Postgres and a scan reserved in one transaction (none left:
/// `NO_SCANS_REMAINING`, nothing stored), then an `analysis` job runs. The answer is seed 001's body when the job
/// finishes within the short wait, else 202 with the job (`Prefer: respond-async` asks for that at once). With an
/// `Idempotency-Key`, a retry of the same photo answers with the first request's job and charges nothing more.
struct AnalyzeRoutes {
    let database: PostgresClient
    let queue: JobQueue
    let waiter: JobWaiter
    let authenticator: Authenticator
    let settings: ResultSettings
    let idempotency: IdempotentRequests

    func register(on api: RouteTable) {
        api.post("analyze", analyze)
    }

    struct Result: Encodable {
        struct ScanUsage: Encodable {
            var remainingScans: Int
            var scanResetDate: Date
            var subscriptionTier: String
        }
        var analysis: AnalysisContract.Analysis
        var mealId: Int64
        var scanUsage: ScanUsage
    }

    func analyze(_ request: Request, _ context: APIContext) async throws -> Response {
        let user = try await authenticator.caller(request).user
        let upload = try await ImageUpload.read(request)
        let key: IdempotentRequests.Key?
        switch try await idempotency.start(request, userID: user.id, route: "analyze", fingerprint: upload.fingerprint) {
        case .job(let id): return try await answer(request, job: id, user: user)
        case .replay(let response): return response
        case .owner(let owned): key = owned
        case .unkeyed: key = nil
        }
        do {
            let id = try await start(upload, user: user, key: key)
            return try await answer(request, job: id, user: user)
        } catch {
            // Only a request that never got its job gives the key back (`release` keeps a key with a job).
            if let key { await idempotency.release(key) }
            throw error
        }
    }

    /// Reserves the scan, stores the photo and writes the analysis job to the outbox in one transaction (with the
    /// idempotency key's job), then puts the job on its queue: its job. The scan is the job's reservation, which the
    /// queue settles as the job ends; a crash after the commit leaves the job to the outbox's relay.
    private func start(_ upload: ImageUpload, user: User, key: IdempotentRequests.Key?) async throws -> JobID {
        let now = Date()
        let outbox = JobOutbox(database: database, queue: queue)
        let job: JobOutbox.Job? = try await database.transaction { tx in
            guard try await ScanQuota(tx).reserve(userID: user.id, now: now, timeZone: settings.scanResetTimeZone) else { return nil }
            let photoID = try await MealPhotos(tx).insert(userID: user.id, contentType: upload.contentType, bytes: upload.bytes)
            let parameters = AnalysisContract.Parameters(
                userId: user.id, photoId: photoID, metadata: upload.metadata.isEmpty ? nil : upload.metadata)
            let job = try JobOutbox.Job(
                AnalysisContract.self, parameters, owner: user.id, reservation: QuotaReservation.scan(photoID: photoID).text)
            try await ScanReservations(tx).insert(photoID: photoID, userID: user.id, jobID: job.id.rawValue)
            try await outbox.add(job, in: tx)
            if let key { try await idempotency.attach(key, job: job.id, in: tx) }
            return job
        }
        guard let job else {
            let quota = try await ScanQuota(database).current(userID: user.id, now: now, timeZone: settings.scanResetTimeZone)
            throw APIError(
                .tooManyRequests, "NO_SCANS_REMAINING",
                "You have no scans remaining. Please wait for your scans to reset or upgrade your plan.",
                details: [
                    "remainingScans": .int(quota.remaining), "scanResetDate": .string(Timestamp.format(quota.resetDate)),
                    "subscriptionTier": .string(quota.tier.rawValue),
                ])
        }
        await outbox.deliver(job)
        return job.id
    }

    /// Seed 001's answer from the analysis job: its result when it finishes within the wait, else 202.
    private func answer(_ request: Request, job id: JobID, user: User) async throws -> Response {
        try await JobAnswer.respond(request, job: id, waiter: waiter, settings: settings) { record in
            guard let result = try? record.result(as: AnalysisContract.self) else {
                throw StoreError("analysis job \(id) succeeded without a result")
            }
            return try Envelope.success(try await Result(result, userID: user.id, database: database, settings: settings))
        }
    }
}

extension AnalyzeRoutes.Result {
    /// The 200 of a finished analysis, for `POST analyze` and for `GET jobs/{id}` alike: the job's estimate and meal,
    /// and the scans left as of this answer (so a client polling the job reads the same `scanUsage` the sync answer
    /// would have given).
    init(_ result: AnalysisContract.Result, userID: String, database: PostgresClient, settings: ResultSettings) async throws {
        let quota = try await ScanQuota(database).current(userID: userID, now: Date(), timeZone: settings.scanResetTimeZone)
        self.init(
            analysis: result.analysis, mealId: result.mealId,
            scanUsage: .init(remainingScans: quota.remaining, scanResetDate: quota.resetDate, subscriptionTier: quota.tier.rawValue))
    }
}
