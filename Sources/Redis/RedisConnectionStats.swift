import Synchronization

/// The process's Redis connections, counted by their threads for `/metrics`: how many are open, how many are
/// answering a batch right now, and how many times one was opened again after it had been connected before.
/// Every client and blocking connection of the process counts here; two relaxed atomic adds per batch.
public enum RedisConnectionStats {
    static let openCount = Atomic<Int>(0)
    static let busyCount = Atomic<Int>(0)
    static let reconnectCount = Atomic<Int>(0)

    /// Connections open now.
    public static var open: Int { openCount.load(ordering: .relaxed) }
    /// Connections sending a batch or waiting for its replies (a blocking read included) now.
    public static var busy: Int { busyCount.load(ordering: .relaxed) }
    /// Connects that replaced a connection lost earlier, since the process started.
    public static var reconnects: Int { reconnectCount.load(ordering: .relaxed) }
}
