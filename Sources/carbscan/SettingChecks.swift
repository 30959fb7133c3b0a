import Foundation
import Queue
import Settings
import Workers

/// Checks between settings and the job files that nothing else would notice.
enum SettingChecks {
    /// `SCAN_RESET_TIMEZONE` decides which day or month a scan-reset fire belongs to; the schedules in
    /// jobs/scan-reset.yml decide when it fires. In two zones, fires land mid-period.
    static func scanResetZone(_ zone: TimeZone, catalog: JobCatalog) throws(SettingError) {
        guard let kind = catalog[ScanResetJob.name] else { return }
        for schedule in kind.schedules where schedule.timeZone.identifier != zone.identifier {
            throw SettingError(
                "SCAN_RESET_TIMEZONE",
                "is \(zone.identifier), but the schedule '\(schedule.name)' of scan-reset.yml fires in \(schedule.timeZone.identifier): set both to one zone"
            )
        }
    }

    /// `CARBSCAN_PORT` when set: a TCP port.
    static func port(_ environment: EnvironmentReader) throws(SettingError) -> Int? {
        guard environment.text("CARBSCAN_PORT") != nil else { return nil }
        return try environment.integer("CARBSCAN_PORT", default: 8080, in: 0...65535)
    }
}
