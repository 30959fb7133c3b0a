import Postgres

/// Rows a job wrote once, found by the job's id (`job_id uuid UNIQUE`): a re-delivered job's earlier answer.
enum JobRows {
    /// Fills the ids a batch's insert left nil (its job's row existed: a re-delivery, or a twin) with the ids of the rows
    /// of `table` those jobs wrote, in one statement. `table` is one of ours, never input; the job ids went through a
    /// `uuid` cast already (the statement that missed them), so the array literal is safe.
    static func fillMissing(_ ids: inout [Int64?], jobIDs: [String], in table: String, _ db: any PostgresQueryable) async throws {
        let missing = zip(jobIDs, ids).filter { $1 == nil }.map(\.0)
        guard !missing.isEmpty else { return }
        var found: [String: Int64] = [:]
        let rows = try await db.query(
            "SELECT job_id::text AS job_id, id FROM \(table) WHERE job_id = ANY($1::uuid[])", ["{" + missing.joined(separator: ",") + "}"])
        for row in rows { found[try row.decode("job_id")] = try row.decode("id") }
        for index in ids.indices where ids[index] == nil { ids[index] = found[jobIDs[index].lowercased()] }
    }
}
