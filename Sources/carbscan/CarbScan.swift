import ArgumentParser

@main
struct CarbScan: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "carbscan",
        abstract: "CarbScan backend: the mobile API, job workers, the cron scheduler and operator commands.",
        subcommands: [
            ServeCommand.self, MigrateCommand.self, WorkCommand.self, ScheduleCommand.self, JobsCommand.self, ConfigCommand.self,
            ProcessesCommand.self, QueuesCommand.self,
        ])
}
