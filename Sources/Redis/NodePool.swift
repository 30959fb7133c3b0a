import Logging
import Synchronization

/// The connections to one server: `poolSize` threads, each owning one connection. Requests are spread over them in
/// turn, except from a task running on one of them (it keeps to its own).
final class NodePool: Sendable {
    let endpoint: RedisEndpoint
    let threads: [ConnectionThread]
    private let next = Atomic<Int>(0)

    init(endpoint: RedisEndpoint, configuration: RedisConfiguration, logger: Logger, name: String = "redis") {
        self.endpoint = endpoint
        let configuration = configuration.at(endpoint)
        threads = (0..<max(1, configuration.poolSize)).map {
            ConnectionThread(name: "\(name)-\($0)", configuration: configuration, logger: logger)
        }
    }

    deinit { close() }

    /// The connection of the thread we are on (a task preferring it as executor), else the next in turn.
    func pick() -> ConnectionThread {
        for thread in threads where thread.isCurrent { return thread }
        return threads[next.wrappingAdd(1, ordering: .relaxed).oldValue % threads.count]
    }

    var isCurrent: Bool { threads.contains { $0.isCurrent } }

    func close() {
        for thread in threads { thread.close() }
    }
}
