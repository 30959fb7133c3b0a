import ArgumentParser
import Foundation
import Logging
import Queue

struct ProcessesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "processes", abstract: "List the live worker and scheduler processes; quiet or stop one.",
        subcommands: [List.self, Quiet.self, Stop.self], defaultSubcommand: List.self)

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Live processes, oldest first, as of their last beat.")
        @OptionGroup var global: GlobalOptions
        @Flag(help: "Print JSON (with each process's busy jobs).") var json = false

        func run() async throws {
            try await reportingErrors {
                let queue = try global.jobQueue(logger: Logger(label: "carbscan.cli"))
                let processes = try await ProcessRegistry(queue: queue).processes()
                if json {
                    print(try jsonText(processes))
                } else {
                    let now = Date()
                    let header = [
                        "id", "kind", "host", "pid", "version", "queues", "busy", "done", "failed", "state", "started", "beat",
                    ]
                    let rows = processes.map { p in
                        [
                            p.id, p.kind.rawValue, p.host, "\(p.pid)", p.version,
                            p.queues.map { queue in queue.limit.map { "\(queue.name)=\($0)" } ?? queue.name }.joined(separator: ","),
                            "\(p.busy)/\(p.concurrency)", "\(p.done)", "\(p.failed)", p.state.rawValue, iso(p.startedAt),
                            String(format: "%.1fs ago", max(0, now.timeIntervalSince(p.lastBeatAt))),
                        ]
                    }
                    print(processes.isEmpty ? "no live processes" : table([header] + rows))
                }
                queue.redis.close()
            }
        }
    }

    struct Quiet: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Tell a worker to take no new job; it finishes its running jobs and stays up (state quiet).")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "Process id, or a prefix only one live process's id has.") var id: String

        func run() async throws {
            try await reportingErrors {
                let queue = try global.jobQueue(logger: Logger(label: "carbscan.cli"))
                let full = try await ProcessRegistry(queue: queue).signal(.quiet, to: id)
                print("\(full): told to quiet")
                queue.redis.close()
            }
        }
    }

    struct Stop: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Stop a process gracefully, as SIGTERM does: running jobs get the grace period, then it exits.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "Process id, or a prefix only one live process's id has.") var id: String

        func run() async throws {
            try await reportingErrors {
                let queue = try global.jobQueue(logger: Logger(label: "carbscan.cli"))
                let full = try await ProcessRegistry(queue: queue).signal(.stop, to: id)
                print("\(full): told to stop")
                queue.redis.close()
            }
        }
    }
}
