import Settings

/// The version a process reports (the process registry and `carbscan_build_info`): env CARBSCAN_VERSION, else `dev`.
enum BuildVersion {
    static let current = EnvironmentReader.process.text("CARBSCAN_VERSION") ?? "dev"
}
