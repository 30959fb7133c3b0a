import Foundation
import Postgres

/// The devices claimed for a push about a job (`push_deliveries`): a device is claimed before its push is sent and
/// the claim is kept once APNs answered for good, so a push job run again (a redelivery, a retry, a crash mid-send)
/// never pushes a device twice for one job.
package struct PushDeliveries: Sendable {
    let db: any PostgresQueryable

    package init(_ db: any PostgresQueryable) { self.db = db }

    /// The user's devices of `platforms` (`ios`, `android`) not yet claimed for `jobID`, oldest registration first.
    package func unclaimedDevices(jobID: UUID, userID: String, platforms: [String] = ["ios"]) async throws -> [Device] {
        try await db.query(
            """
            SELECT d.id, d.user_id, d.token, d.platform, d.device_model, d.os_version, d.app_version
            FROM devices d
            WHERE d.user_id = $1 AND d.platform = ANY (string_to_array($3, ','))
              AND NOT EXISTS (SELECT 1 FROM push_deliveries p WHERE p.job_id = $2 AND p.device_id = d.id)
            ORDER BY d.created_at, d.id
            """,
            [userID, jobID, platforms.joined(separator: ",")]
        ).map { row in
            Device(
                id: try row.decode("id"), userID: try row.decode("user_id"), token: try row.decode("token"),
                platform: try row.decode("platform"), deviceModel: try row.decode("device_model"),
                osVersion: try row.decode("os_version"), appVersion: try row.decode("app_version"))
        }
    }

    /// Claims the device for the job's push; false when it is claimed already (another attempt has it or sent it)
    /// or the device is gone.
    package func claim(jobID: UUID, deviceID: UUID) async throws -> Bool {
        try await db.execute(
            """
            INSERT INTO push_deliveries (job_id, device_id) SELECT $1, id FROM devices WHERE id = $2
            ON CONFLICT (job_id, device_id) DO NOTHING
            """,
            [jobID, deviceID]) == 1
    }

    /// Gives the claim back, so a later attempt sends the push: the provider asked for a retry or was not reached.
    package func release(jobID: UUID, deviceID: UUID) async throws {
        try await db.execute("DELETE FROM push_deliveries WHERE job_id = $1 AND device_id = $2", [jobID, deviceID])
    }

    /// Notes the provider's id of the accepted push (APNs' `apns-id`, FCM's message name).
    package func accepted(jobID: UUID, deviceID: UUID, messageID: String?) async throws {
        try await db.execute(
            "UPDATE push_deliveries SET message_id = $3 WHERE job_id = $1 AND device_id = $2", [jobID, deviceID, messageID])
    }

    /// Deletes claims older than `cutoff`: a push job is long over by then (its retries span an hour at most), so the
    /// claims only stood against a redelivery that can no longer come. Returns how many went.
    package func deleteClaimed(before cutoff: Date) async throws -> Int {
        try await db.execute("DELETE FROM push_deliveries WHERE claimed_at < $1::timestamptz", [cutoff])
    }

    /// Whether the device is claimed for the job (tests and operators).
    package func isClaimed(jobID: UUID, deviceID: UUID) async throws -> Bool {
        try await !db.query("SELECT 1 FROM push_deliveries WHERE job_id = $1 AND device_id = $2", [jobID, deviceID]).isEmpty
    }
}
