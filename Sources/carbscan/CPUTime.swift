import Foundation

/// User and system CPU seconds so far: of this process (`RUSAGE_SELF`), or of its children that have ended and been
/// waited for (`RUSAGE_CHILDREN`: a benchmark's `redis-benchmark`, once it exits).
func cpuSeconds(_ who: __rusage_who) -> Double {
    var usage = rusage()
    getrusage(who.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

/// User CPU seconds only: the client's own code per call, without the kernel's share of the round trip.
func userCPUSeconds(_ who: __rusage_who) -> Double {
    var usage = rusage()
    getrusage(who.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
}
