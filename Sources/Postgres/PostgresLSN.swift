/// A position in the write-ahead log (`pg_lsn`), as the byte offset it stands for: `16/B374D848` is
/// `0x16_B374_D848`. Positions of one cluster compare as numbers, so "has the replica replayed this write" is `>=`.
package enum PostgresLSN {
    /// Parses Postgres's text form, two hexadecimal numbers of at most 8 digits each around a `/`; nil otherwise.
    package static func parse(_ text: some StringProtocol) -> UInt64? {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, (1...8).contains(parts[0].count), (1...8).contains(parts[1].count),
            let high = UInt64(parts[0], radix: 16), let low = UInt64(parts[1], radix: 16)
        else { return nil }
        return high << 32 | low
    }

    /// Postgres's text form (`16/B374D848`).
    package static func format(_ lsn: UInt64) -> String {
        String(lsn >> 32, radix: 16, uppercase: true) + "/" + String(lsn & 0xFFFF_FFFF, radix: 16, uppercase: true)
    }

    /// The primary's current WAL insert position (`pg_current_wal_insert_lsn()`): every transaction committed before
    /// the call lies at or before it, its commit record included. (The write position, `pg_current_wal_lsn()`, can lie
    /// before the commit record of an asynchronous commit, one that wrote no other WAL or ran with
    /// `synchronous_commit = off`, which is not yet written out: a replica there has not got the commit.)
    package static func current(on primary: some PostgresQueryable) async throws -> UInt64 {
        let text: String = try await primary.query("SELECT pg_current_wal_insert_lsn()::text AS lsn").first?.decode("lsn") ?? ""
        guard let lsn = parse(text) else {
            throw PostgresError(.decoding, "pg_current_wal_insert_lsn() answered '\(text)', not an LSN")
        }
        return lsn
    }
}
