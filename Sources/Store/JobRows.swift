import Postgres

/// Rows a job wrote once, found by the job's id (`job_id uuid UNIQUE`): a re-delivered job's earlier answer.
enum JobRows {
    /// The ids of the rows of `table` written by these jobs, by lowercased job id. `table` is one of ours, never input;
    /// the job ids went through a `uuid` cast already (the statement that missed them), so the array literal is safe.
    static func ids(in table: String, jobIDs: [String], _ db: any PostgresQueryable) async throws -> [String: Int64] {
        var ids: [String: Int64] = [:]
        let rows = try await db.query(
            "SELECT job_id::text AS job_id, id FROM \(table) WHERE job_id = ANY($1::uuid[])", ["{" + jobIDs.joined(separator: ",") + "}"])
        for row in rows { ids[try row.decode("job_id")] = try row.decode("id") }
        return ids
    }
}
