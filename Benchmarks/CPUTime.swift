import Foundation

/// CPU seconds so far, user and system together and user alone (the client's own code, without the kernel's share of
/// a round trip): of this process (`RUSAGE_SELF`), or of its children that have ended and been waited for
/// (`RUSAGE_CHILDREN`: a benchmark's `redis-benchmark`, once it exits).
struct CPUTime {
    var all: Double
    var user: Double

    init(all: Double = 0, user: Double = 0) {
        self.all = all
        self.user = user
    }

    init(_ who: __rusage_who) {
        var usage = rusage()
        getrusage(who.rawValue, &usage)
        user = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
        all = user + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
    }

    static func + (left: CPUTime, right: CPUTime) -> CPUTime { CPUTime(all: left.all + right.all, user: left.user + right.user) }
    static func - (left: CPUTime, right: CPUTime) -> CPUTime { CPUTime(all: left.all - right.all, user: left.user - right.user) }
}

/// User and system CPU seconds so far (see ``CPUTime``).
func cpuSeconds(_ who: __rusage_who) -> Double { CPUTime(who).all }
