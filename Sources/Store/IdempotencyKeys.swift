import Foundation
import Postgres

/// What an `Idempotency-Key` holds: the request it was first sent with and what that request answered.
package struct IdempotencyRecord: Sendable, Equatable {
    package var route: String
    package var fingerprint: [UInt8]
    package var jobID: String?
    package var status: Int?
    package var body: [UInt8]?
    package var claimedAt: Date
}

/// The `idempotency_keys` table. Every method is one statement; the first request to insert a key owns it.
package struct IdempotencyKeys: Sendable {
    let db: any PostgresQueryable

    /// How long a key is remembered (the draft's and Stripe's 24 hours).
    package static let lifetime: TimeInterval = 86_400

    package init(_ db: any PostgresQueryable) { self.db = db }

    /// Takes the key for a new request: true when this call inserted it (or replaced a key older than `lifetime`);
    /// false when it is already held.
    package func claim(userID: String?, key: String, route: String, fingerprint: [UInt8]) async throws -> Bool {
        let rows = try await db.query(
            """
            INSERT INTO idempotency_keys (user_id, key, route, fingerprint) VALUES ($1, $2, $3, $4)
            ON CONFLICT (COALESCE(user_id, ''), key) DO UPDATE
              SET route = EXCLUDED.route, fingerprint = EXCLUDED.fingerprint, job_id = NULL, status = NULL, body = NULL,
                  created_at = now(), claimed_at = now()
              WHERE idempotency_keys.created_at < now() - make_interval(secs => $5)
            RETURNING 1 AS claimed
            """,
            [userID, key, route, fingerprint, Self.lifetime])
        return !rows.isEmpty
    }

    package func find(userID: String?, key: String) async throws -> IdempotencyRecord? {
        try await db.query(
            """
            SELECT route, fingerprint, job_id, status, body, claimed_at FROM idempotency_keys
            WHERE COALESCE(user_id, '') = COALESCE($1, '') AND key = $2
            """,
            [userID, key]
        ).first.map { row in
            IdempotencyRecord(
                route: try row.decode("route"), fingerprint: try row.decode("fingerprint"), jobID: try row.decode("job_id"),
                status: try row.decode("status"), body: try row.decode("body"), claimedAt: try row.decode("claimed_at"))
        }
    }

    /// Takes over a key whose request never got as far as a job or an answer and was claimed over `staleAfter`
    /// seconds ago (its process died): true when this call took it. The database's clock judges, as it wrote
    /// `claimed_at`: an API host whose clock runs ahead cannot take a live request's key.
    package func takeOver(userID: String?, key: String, staleAfter: TimeInterval) async throws -> Bool {
        try await db.execute(
            """
            UPDATE idempotency_keys SET claimed_at = now()
            WHERE COALESCE(user_id, '') = COALESCE($1, '') AND key = $2 AND job_id IS NULL AND status IS NULL
              AND claimed_at < now() - make_interval(secs => $3)
            """,
            [userID, key, staleAfter]) == 1
    }

    /// The job the key's request started: from now on a retry answers with it.
    package func attach(userID: String?, key: String, jobID: String) async throws {
        try await db.execute(
            "UPDATE idempotency_keys SET job_id = $3 WHERE COALESCE(user_id, '') = COALESCE($1, '') AND key = $2",
            [userID, key, jobID])
    }

    /// The answer to replay (nil body: the request is done and its job answers for it).
    package func complete(userID: String?, key: String, status: Int, body: [UInt8]?) async throws {
        try await db.execute(
            "UPDATE idempotency_keys SET status = $3, body = $4 WHERE COALESCE(user_id, '') = COALESCE($1, '') AND key = $2",
            [userID, key, status, body])
    }

    /// Frees a key whose request failed before it charged or stored anything, so a retry runs it afresh.
    package func release(userID: String?, key: String) async throws {
        try await db.execute(
            "DELETE FROM idempotency_keys WHERE COALESCE(user_id, '') = COALESCE($1, '') AND key = $2 AND job_id IS NULL",
            [userID, key])
    }

    /// Deletes keys past `lifetime`; returns how many.
    @discardableResult
    package func deleteExpired(limit: Int = 10_000) async throws -> Int {
        try await db.execute(
            """
            DELETE FROM idempotency_keys WHERE ctid IN (
                SELECT ctid FROM idempotency_keys WHERE created_at < now() - make_interval(secs => $1) LIMIT $2)
            """,
            [Self.lifetime, limit])
    }
}
