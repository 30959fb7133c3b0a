extension PostgresReadReplicas {
    /// Checks the replicas every `checkInterval` until the task is cancelled: the primary's WAL position, and each
    /// replica's (one task each, so a replica that hangs delays no other; one that has not answered for
    /// `checkTimeout` is down).
    package func run() async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.every(self.options.checkInterval) { await self.samplePrimary() } }
            for replica in replicas {
                group.addTask { await self.every(self.options.checkInterval) { await self.check(replica) } }
            }
            await group.waitForAll()
        }
    }

    /// One round of checks now (the primary's position, then every replica's), for tests and start-up.
    package func checkNow() async {
        await samplePrimary()
        await withTaskGroup(of: Void.self) { group in
            for replica in replicas { group.addTask { await self.check(replica) } }
        }
    }

    private func every(_ interval: Duration, _ body: () async -> Void) async {
        while !Task.isCancelled {
            await body()
            try? await Task.sleep(for: interval)
        }
    }

    private func samplePrimary() async {
        let now = ContinuousClock.now
        if let lsn = try? await primaryLSN() {
            let keep = options.maxLag * 3
            primarySamples.withLock { samples in
                samples.append((now, lsn))
                samples.removeAll { now - $0.at > keep }
            }
        }
        // A replica whose check hangs gets no answer to record: it is marked down here.
        for replica in replicas {
            let health = replica.currentHealth
            if case .down = health.state { continue }
            if let checkedAt = health.checkedAt, now - checkedAt > options.checkTimeout {
                replica.update(
                    .down("no answer to the health check for \(options.checkTimeout)"), logger: logger, maxLag: options.maxLag, at: now)
            }
        }
    }

    private func check(_ replica: PostgresReplica) async {
        let state: (inRecovery: Bool, replayed: UInt64?, replayAge: Double?)
        do {
            let row = try await replica.client.query(
                """
                SELECT pg_is_in_recovery() AS in_recovery, pg_last_wal_replay_lsn()::text AS replayed,
                  extract(epoch FROM now() - pg_last_xact_replay_timestamp())::float8 AS replay_age
                """
            ).first
            let replayed: String? = try row?.decode("replayed")
            state = (try row?.decode("in_recovery") ?? false, replayed.flatMap(PostgresLSN.parse), try row?.decode("replay_age"))
        } catch {
            replica.update(.down("\(error)"), logger: logger, maxLag: options.maxLag)
            return
        }
        guard state.inRecovery, let replayed = state.replayed else {
            replica.update(.notInRecovery, logger: logger, maxLag: options.maxLag)
            return
        }
        let lag = lag(replayed: replayed, replayAge: state.replayAge, now: .now)
        let maxLag = Double(options.maxLag.components.seconds) + Double(options.maxLag.components.attoseconds) / 1e18
        replica.update(lag <= maxLag ? .healthy : .behind, replayed: replayed, lag: lag, logger: logger, maxLag: options.maxLag)
    }

    /// How far behind the primary a replica that replayed up to `replayed` is, in seconds: 0 when it has replayed the
    /// primary's last known position; otherwise the smaller of two upper bounds of how old its data is: the age of the
    /// last transaction it replayed (`replayAge`, which alone overstates the lag of a replica of an idle primary that
    /// has just written again), and the time since the primary's position was last seen at or before `replayed` (all
    /// it had written by then, the replica has). Infinite when neither is known.
    func lag(replayed: UInt64, replayAge: Double?, now: ContinuousClock.Instant) -> Double {
        let samples = primarySamples.withLock { $0 }
        guard let latest = samples.last else { return replayAge.map { max(0, $0) } ?? .infinity }
        if replayed >= latest.lsn { return 0 }
        var lag = replayAge.map { max(0, $0) } ?? .infinity
        if let caughtUp = samples.last(where: { $0.lsn <= replayed }) {
            let age = now - caughtUp.at
            lag = min(lag, Double(age.components.seconds) + Double(age.components.attoseconds) / 1e18)
        }
        return lag
    }
}
