import Logging
import Postgres
import ReadYourWrites
import Redis
import ServiceLifecycle

/// Where the API's read-only queries run: the primary, or with `DATABASE_READ_URL` a read replica that has every write
/// of the reading user (read-your-writes). Writes and transactions never come here: they use the primary.
///
/// A user's write (an authenticated request other than GET, and a finished job's result handed to its owner: the
/// worker wrote the user's rows before it finished) raises their mark (``WriteMarks``) to the primary's WAL position
/// taken after the write committed; their reads go to a replica only once it has replayed that position. Without
/// replicas all of this costs nothing: no statement, no Redis call.
package struct ReadRouting: Sendable {
    package let primary: PostgresClient
    package let replicas: PostgresReadReplicas?
    let marks: WriteMarks?
    let logger: Logger

    /// Reads on the primary only.
    package init(primary: PostgresClient) {
        self.primary = primary
        self.replicas = nil
        self.marks = nil
        self.logger = Logger(label: "carbscan.api")
    }

    /// Reads on `replicas` when they have the reader's writes; marks kept in `redis` under `prefix` for a few lag
    /// bounds.
    package init(replicas: PostgresReadReplicas, redis: RedisClient, prefix: String, logger: Logger) {
        self.primary = replicas.primary
        self.replicas = replicas
        self.marks = WriteMarks(redis: redis, prefix: prefix, lifetime: replicas.options.maxLag * 3)
        self.logger = logger
    }

    /// Where to run the read-only statements of a request by `userID`.
    package func reader(for userID: String) async -> any PostgresQueryable {
        guard let replicas, let marks else { return primary }
        do {
            return replicas.reader(after: try await marks.mark(of: userID) ?? 0)
        } catch {
            // Whether the user just wrote is not known: read as if they had.
            logger.warning("could not read a user's write mark; reading from the primary", metadata: ["error": "\(error)"])
            return replicas.reader(after: .max)
        }
    }

    /// Notes that `userID` wrote (committed) just now: their reads wait for a replica that has replayed this. Best
    /// effort: a mark lost to an outage lets the user's next reads, for at most the lag bound, miss the write.
    package func noteWrite(by userID: String) async {
        guard let replicas, let marks else { return }
        do {
            try await marks.mark(userID, at: try await replicas.primaryLSN())
        } catch {
            logger.warning("could not mark a user's write for read-your-writes", metadata: ["error": "\(error)"])
        }
    }
}

/// Runs the replicas' health checks while the API serves (``PostgresReadReplicas/run()``).
package struct ReadReplicaHealthService: Service {
    let replicas: PostgresReadReplicas

    package init(_ replicas: PostgresReadReplicas) { self.replicas = replicas }

    package func run() async throws {
        await cancelWhenGracefulShutdown { await replicas.run() }
    }
}
