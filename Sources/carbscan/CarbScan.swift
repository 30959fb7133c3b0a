import ArgumentParser

@main
struct CarbScan: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "carbscan",
        abstract: "CarbScan backend: job workers, the cron scheduler and operator commands.",
        subcommands: [WorkCommand.self, ScheduleCommand.self, JobsCommand.self, BenchCommand.self])
}
