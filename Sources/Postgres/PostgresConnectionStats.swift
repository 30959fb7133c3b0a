import Synchronization

/// The process's Postgres connections, for `/metrics`: how many are open, how many are lent to a caller now (a
/// statement or a transaction), how many times a connection was opened again after an earlier one was lost, and how
/// often and how long callers waited for a free connection of an exhausted pool.
/// Every client of the process counts here.
package enum PostgresConnectionStats {
    static let openCount = Atomic<Int>(0)
    static let busyCount = Atomic<Int>(0)
    static let reconnectCount = Atomic<Int>(0)
    static let waitCount = Atomic<Int>(0)
    static let waitMicroseconds = Atomic<Int>(0)

    /// Connections open now.
    package static var open: Int { openCount.load(ordering: .relaxed) }
    /// Connections lent to a caller now.
    package static var busy: Int { busyCount.load(ordering: .relaxed) }
    /// Connects that replaced a connection of the same pool slot, since the process started.
    package static var reconnects: Int { reconnectCount.load(ordering: .relaxed) }
    /// Calls that found every connection of their pool lent and queued for one, since the process started.
    package static var waits: Int { waitCount.load(ordering: .relaxed) }
    /// Seconds those calls spent queued, in total.
    package static var waitSeconds: Double { Double(waitMicroseconds.load(ordering: .relaxed)) / 1_000_000 }
}
