import Synchronization

/// The process's Postgres connections, for `/metrics`: how many are open, how many are lent to a caller now (a
/// statement or a transaction), and how many times a connection was opened again after an earlier one was lost.
/// Every client of the process counts here.
package enum PostgresConnectionStats {
    static let openCount = Atomic<Int>(0)
    static let busyCount = Atomic<Int>(0)
    static let reconnectCount = Atomic<Int>(0)

    /// Connections open now.
    package static var open: Int { openCount.load(ordering: .relaxed) }
    /// Connections lent to a caller now.
    package static var busy: Int { busyCount.load(ordering: .relaxed) }
    /// Connects that replaced a connection of the same pool slot, since the process started.
    package static var reconnects: Int { reconnectCount.load(ordering: .relaxed) }
}
