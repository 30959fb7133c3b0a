import Foundation
import Postgres

/// A CarbScan account (seed 000's users table). The password hash never leaves `Users`.
package struct User: Sendable, Equatable {
    package var id: String
    package var email: String?
    package var emailVerified: Bool
    package var firstName: String?
    package var lastName: String?
    package var profileImageUrl: String?
    package var timeZone: String
    package var emailRemindersEnabled: Bool
    package var tier: Tier
    package var subscriptionStatus: String
    package var subscriptionRenewalDate: Date?
    package var remainingScans: Int
    package var scanResetDate: Date
    package var createdAt: Date
    package var updatedAt: Date

    static let columns = """
        id, email, email_verified, first_name, last_name, profile_image_url, time_zone, email_reminders_enabled,
        subscription_tier, subscription_status, subscription_renewal_date, remaining_scans, scan_reset_date,
        created_at, updated_at
        """

    init(row: PostgresRow) throws {
        id = try row.decode("id")
        email = try row.decode("email")
        emailVerified = try row.decode("email_verified")
        firstName = try row.decode("first_name")
        lastName = try row.decode("last_name")
        profileImageUrl = try row.decode("profile_image_url")
        timeZone = try row.decode("time_zone")
        emailRemindersEnabled = try row.decode("email_reminders_enabled")
        tier = Tier(rawValue: try row.decode("subscription_tier", as: String.self)) ?? .free
        subscriptionStatus = try row.decode("subscription_status")
        subscriptionRenewalDate = try row.decode("subscription_renewal_date")
        remainingScans = try row.decode("remaining_scans")
        scanResetDate = try row.decode("scan_reset_date")
        createdAt = try row.decode("created_at")
        updatedAt = try row.decode("updated_at")
    }

    /// The user's zone, UTC when the stored name is unknown to this system.
    package var calendarTimeZone: TimeZone { TimeZone(identifier: timeZone) ?? .gmt }
}

/// The fields a client may change with `POST /users/me`; nil leaves a field as it is.
package struct ProfileChanges: Sendable {
    package var firstName: String?
    package var lastName: String?
    package var profileImageUrl: String?
    package var timeZone: String?
    package var emailRemindersEnabled: Bool?

    package init(
        firstName: String? = nil, lastName: String? = nil, profileImageUrl: String? = nil, timeZone: String? = nil,
        emailRemindersEnabled: Bool? = nil
    ) {
        self.firstName = firstName
        self.lastName = lastName
        self.profileImageUrl = profileImageUrl
        self.timeZone = timeZone
        self.emailRemindersEnabled = emailRemindersEnabled
    }
}

/// Users and the identities that sign them in.
package struct Users: Sendable {
    let db: any PostgresQueryable

    package init(_ db: any PostgresQueryable) { self.db = db }

    package func find(id: String) async throws -> User? {
        try await db.query("SELECT \(User.columns) FROM users WHERE id = $1", [id]).first.map(User.init)
    }

    /// The user, only if the sign-in `session` (a refresh-token family) was not revoked: one query per request.
    package func find(id: String, liveSession session: UUID) async throws -> User? {
        try await db.query(
            """
            SELECT \(User.columns) FROM users WHERE id = $1
              AND NOT EXISTS (SELECT 1 FROM refresh_tokens WHERE family_id = $2 AND revoked_at IS NOT NULL)
            """,
            [id, session]
        ).first.map(User.init)
    }

    package func find(email: String) async throws -> User? {
        try await db.query("SELECT \(User.columns) FROM users WHERE lower(email) = lower($1)", [email]).first.map(User.init)
    }

    /// The user an identity signs in, if it is linked.
    package func find(provider: String, subject: String) async throws -> User? {
        try await db.query(
            """
            SELECT \(User.columns) FROM users
            WHERE id = (SELECT user_id FROM identities WHERE provider = $1 AND subject = $2)
            """,
            [provider, subject]
        ).first.map(User.init)
    }

    /// Creates a free-tier user with a full scan quota. Fails with a unique violation when the email is taken.
    package func create(
        id: String, email: String?, emailVerified: Bool, firstName: String?, lastName: String?, passwordHash: String? = nil,
        timeZone: String = "UTC", now: Date = Date()
    ) async throws -> User {
        let rows = try await db.query(
            """
            INSERT INTO users (id, email, email_verified, first_name, last_name, password_hash, time_zone,
                               remaining_scans, scan_reset_date, created_at, updated_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10)
            RETURNING \(User.columns)
            """,
            [
                id, email, emailVerified, firstName, lastName, passwordHash, timeZone, Tier.free.scanLimit,
                Tier.free.nextScanReset(after: now), now,
            ]
        )
        return try User(row: rows[rows.startIndex])
    }

    /// Links an identity to a user; a second link of the same identity is a unique violation.
    package func link(userID: String, provider: String, subject: String, email: String?) async throws {
        try await db.execute(
            "INSERT INTO identities (user_id, provider, subject, email) VALUES ($1, $2, $3, $4)",
            [userID, provider, subject, email]
        )
    }

    /// The identity the user signed in with most recently: (provider, subject).
    package func latestIdentity(userID: String) async throws -> (provider: String, subject: String)? {
        guard
            let row = try await db.query(
                "SELECT provider, subject FROM identities WHERE user_id = $1 ORDER BY last_used_at DESC, id DESC LIMIT 1", [userID]
            ).first
        else { return nil }
        return (try row.decode("provider"), try row.decode("subject"))
    }

    package func touchIdentity(provider: String, subject: String) async throws {
        try await db.execute(
            "UPDATE identities SET last_used_at = now() WHERE provider = $1 AND subject = $2", [provider, subject])
    }

    /// Fills in names and email only where they are still empty (Apple sends them on the first sign-in only).
    package func fillMissing(id: String, email: String?, emailVerified: Bool, firstName: String?, lastName: String?) async throws {
        try await db.execute(
            """
            UPDATE users SET email = COALESCE(email, $2), email_verified = email_verified OR ($2 IS NOT NULL AND $3),
                first_name = COALESCE(first_name, $4), last_name = COALESCE(last_name, $5), updated_at = now()
            WHERE id = $1
            """,
            [id, email, emailVerified, firstName, lastName]
        )
    }

    /// Marks the email proven and leaves the account no way in but the prover's: the password and every identity
    /// are removed (a pre-hijacker's password sign-up among them).
    package func takeOver(id: String) async throws {
        try await db.execute(
            "UPDATE users SET password_hash = NULL, email_verified = true, updated_at = now() WHERE id = $1", [id])
        try await db.execute("DELETE FROM identities WHERE user_id = $1", [id])
    }

    package func passwordHash(userID: String) async throws -> String? {
        try await db.query("SELECT password_hash FROM users WHERE id = $1", [userID]).first?.decode("password_hash")
    }

    package func setPasswordHash(userID: String, hash: String) async throws {
        try await db.execute("UPDATE users SET password_hash = $2, updated_at = now() WHERE id = $1", [userID, hash])
    }

    package func update(id: String, _ changes: ProfileChanges) async throws -> User? {
        try await db.query(
            """
            UPDATE users SET first_name = COALESCE($2, first_name), last_name = COALESCE($3, last_name),
                profile_image_url = COALESCE($4, profile_image_url), time_zone = COALESCE($5, time_zone),
                email_reminders_enabled = COALESCE($6, email_reminders_enabled), updated_at = now()
            WHERE id = $1 RETURNING \(User.columns)
            """,
            [id, changes.firstName, changes.lastName, changes.profileImageUrl, changes.timeZone, changes.emailRemindersEnabled]
        ).first.map(User.init)
    }

    /// Erases the user and, through `ON DELETE CASCADE`, every row that belongs to them, in one statement.
    @discardableResult
    package func delete(id: String) async throws -> Bool {
        try await db.execute("DELETE FROM users WHERE id = $1", [id]) == 1
    }
}
