import Foundation
import Postgres

/// Stored meal photos (bytes in Postgres, never in Redis).
package struct MealPhotos: Sendable {
    let db: any PostgresQueryable

    package init(_ db: any PostgresQueryable) { self.db = db }

    package func insert(userID: String, contentType: String, bytes: [UInt8]) async throws -> Int64 {
        let rows = try await db.query(
            """
            INSERT INTO meal_photos (user_id, content_type, byte_size, bytes, sha256)
            VALUES ($1, $2, $3, $4, sha256($4::bytea)) RETURNING id
            """,
            [userID, contentType, bytes.count, bytes])
        return try rows[rows.startIndex].decode("id")
    }

    /// The photo as a `data:` URL (what a vision model takes), encoded by Postgres: the bytes never cross as hex
    /// text, and nothing decodes and re-encodes them here (that was a fifth of an analysis worker's CPU).
    /// `encode(…, 'base64')` breaks its lines every 76 characters; a data URL has none: `replace` drops them
    /// (`translate` took 770 µs of Postgres CPU per 32 KB photo, five times the encoding).
    package func dataURL(id: Int64, userID: String) async throws -> String? {
        try await db.query(
            """
            SELECT 'data:' || content_type || ';base64,' || replace(encode(bytes, 'base64'), E'\\n', '') AS url
            FROM meal_photos WHERE id = $1 AND user_id = $2
            """, [id, userID]
        ).first?.decode("url")
    }

    /// The photo of a meal of `userID`, found through the meal (another user's meal reads as none), with its first
    /// `prefix` bytes (none for a revalidation: it needs only the hash, and the photo stays in Postgres).
    package func image(ofMeal mealID: Int64, userID: String, prefix: Int) async throws -> MealImage? {
        try await db.query(
            """
            SELECT p.id, p.content_type, p.byte_size, p.created_at, COALESCE(p.sha256, sha256(p.bytes)) AS sha256,
                   CASE WHEN $3 > 0 THEN substring(p.bytes FROM 1 FOR $3::int) ELSE '' END AS prefix
            FROM meals m JOIN meal_photos p ON p.id = m.photo_id AND p.user_id = m.user_id
            WHERE m.id = $1 AND m.user_id = $2
            """, [mealID, userID, prefix]
        ).first.map { row in
            MealImage(
                photoID: try row.decode("id"), contentType: try row.decode("content_type"), byteSize: try row.decode("byte_size"),
                createdAt: try row.decode("created_at"), sha256: try row.decode("sha256"), prefix: try row.decode("prefix"))
        }
    }

    /// `count` bytes of a photo from `offset` (0-based); nil when the photo is gone (retention deleted it). Photos are
    /// read a slice at a time so that serving one holds a slice in memory, not the whole photo (text results carry
    /// `bytea` as hex, twice its size). A photo that did not compress (JPEG and the like) is stored as is, out of line,
    /// and Postgres reads only the slice's TOAST chunks.
    package func bytes(ofPhoto photoID: Int64, userID: String, offset: Int, count: Int) async throws -> [UInt8]? {
        try await db.query(
            "SELECT substring(bytes FROM $3::int + 1 FOR $4::int) AS part FROM meal_photos WHERE id = $1 AND user_id = $2",
            [photoID, userID, offset, count]
        ).first?.decode("part")
    }
}

/// A meal's stored photo as `GET meals/{id}/image` serves it.
package struct MealImage: Sendable {
    package var photoID: Int64
    package var contentType: String
    package var byteSize: Int
    /// When it was stored: retention deletes it `PHOTO_RETENTION_DAYS` later.
    package var createdAt: Date
    /// The SHA-256 of the bytes (a photo never changes, so this names its one representation).
    package var sha256: [UInt8]
    /// The first bytes, as many as asked for.
    package var prefix: [UInt8]
}
