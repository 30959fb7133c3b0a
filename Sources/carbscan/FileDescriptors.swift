import Glibc
import Logging

/// The process's open-file limit. Each job in flight may hold a socket (an outbound HTTP request), besides the Redis
/// and Postgres connections: a worker running thousands at once needs more than the usual soft limit of 1,024.
enum FileDescriptors {
    /// What a process needs beyond one descriptor per job in flight: connections, log files, the runtime's own.
    static let reserve = 256

    /// Raises the soft limit to the hard limit, and warns when even that is below what `concurrency` jobs could hold.
    static func raiseLimit(toServe concurrency: Int, logger: Logger) {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        let needed = concurrency + reserve
        if limit.rlim_cur < rlim_t(needed) {
            logger.warning(
                "the open-file limit is below what --concurrency may need: outbound requests past it fail",
                metadata: ["limit": "\(limit.rlim_cur)", "needed": "\(needed)", "concurrency": "\(concurrency)"])
        }
    }
}
