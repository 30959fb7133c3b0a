import Foundation
import Postgres

/// A device's push token (seed 001, `devices/register`); one row per token.
package struct Device: Sendable, Equatable {
    package var id: UUID
    package var userID: String?
    package var token: String
    package var platform: String
    package var deviceModel: String?
    package var osVersion: String?
    package var appVersion: String?
}

package struct Devices: Sendable {
    let db: any PostgresQueryable

    package init(_ db: any PostgresQueryable) { self.db = db }

    /// Stores the token, or updates its row: a token that moves to another user (or to no user) moves with its row,
    /// so a push never reaches the previous owner of a phone. Returns the row's id, stable across re-registrations.
    package func register(
        token: String, userID: String?, platform: String, deviceModel: String?, osVersion: String?, appVersion: String?
    ) async throws -> UUID {
        let rows = try await db.query(
            """
            INSERT INTO devices (token, user_id, platform, device_model, os_version, app_version)
            VALUES ($1, $2, $3, $4, $5, $6)
            ON CONFLICT (token) DO UPDATE SET
                user_id = EXCLUDED.user_id, platform = EXCLUDED.platform, device_model = EXCLUDED.device_model,
                os_version = EXCLUDED.os_version, app_version = EXCLUDED.app_version, updated_at = now()
            RETURNING id
            """,
            [token, userID, platform, deviceModel, osVersion, appVersion])
        return try rows[rows.startIndex].decode("id")
    }

    /// Removes the token's row; true when there was one. Removing an unknown token is not an error (idempotent).
    @discardableResult
    package func unregister(token: String) async throws -> Bool {
        try await db.execute("DELETE FROM devices WHERE token = $1", [token]) > 0
    }

    /// Removes a device APNs called gone (410 `Unregistered`): only if it was not registered again after
    /// `unregisteredAt`, APNs' time of learning so (a token the app registered since then is valid again).
    @discardableResult
    package func remove(id: UUID, unregisteredAt: Date?) async throws -> Bool {
        guard let unregisteredAt else { return try await db.execute("DELETE FROM devices WHERE id = $1", [id]) > 0 }
        return try await db.execute("DELETE FROM devices WHERE id = $1 AND updated_at <= $2", [id, unregisteredAt]) > 0
    }

    package func find(token: String) async throws -> Device? {
        try await db.query(
            "SELECT id, user_id, token, platform, device_model, os_version, app_version FROM devices WHERE token = $1", [token]
        ).first.map { row in
            Device(
                id: try row.decode("id"), userID: try row.decode("user_id"), token: try row.decode("token"),
                platform: try row.decode("platform"), deviceModel: try row.decode("device_model"),
                osVersion: try row.decode("os_version"), appVersion: try row.decode("app_version"))
        }
    }
}
