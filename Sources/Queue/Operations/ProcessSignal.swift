/// What an operator can tell a process (`carbscan processes quiet|stop ID`, `carbscan jobs cancel ID`). A process
/// reads its signals at least once a second.
public enum ProcessSignal: Sendable, Equatable {
    /// Take no new job; finish the running ones; keep beating as `quiet`.
    case quiet
    /// The graceful stop a SIGTERM starts: the process exits.
    case stop
    /// Cancel the task of this job if it runs here.
    case cancel(JobID)

    /// The signal as written in the process's signals list.
    var wire: String {
        switch self {
        case .quiet: "quiet"
        case .stop: "stop"
        case .cancel(let id): "cancel " + id.rawValue
        }
    }

    init?(wire: String) {
        switch wire {
        case "quiet": self = .quiet
        case "stop": self = .stop
        default:
            guard wire.hasPrefix("cancel "), let id = JobID(rawValue: String(wire.dropFirst(7))) else { return nil }
            self = .cancel(id)
        }
    }
}
