import Foundation

/// The version a process reports (the process registry; env CARBSCAN_VERSION, set by the deploy, else `dev`).
enum BuildVersion {
    static let current = ProcessInfo.processInfo.environment["CARBSCAN_VERSION"].flatMap { $0.isEmpty ? nil : $0 } ?? "dev"
}
