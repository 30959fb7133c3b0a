import Telemetry

/// The version a process reports (the process registry and `carbscan_build_info`): env CARBSCAN_VERSION, else `dev`.
enum BuildVersion {
    static let current = Telemetry.version
}
