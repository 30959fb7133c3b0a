import ArgumentParser
import Foundation
import Logging
import Queue

struct QueuesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "queues", abstract: "List the queues with their paused state; pause or resume one.",
        subcommands: [List.self, Pause.self, Resume.self], defaultSubcommand: List.self)

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Per queue: paused, queued, running, scheduled, retrying, dead, and the permits held of its global limit.")
        @OptionGroup var global: GlobalOptions
        @Flag(help: "Print JSON.") var json = false

        func run() async throws {
            try await reportingErrors {
                let queue = try global.jobQueue(logger: Logger(label: "carbscan.cli"))
                let queues = try await QueueControl(queue: queue).overview()
                if json {
                    print(try jsonText(queues))
                } else {
                    let header = ["queue", "state", "queued", "running", "scheduled", "retrying", "dead", "global"]
                    let rows = queues.map { (queue: QueueOverview) -> [String] in
                        var global = "-"
                        if let limit = queue.globalLimit { global = "\(queue.permitsHeld ?? 0)/\(limit)" }
                        return [
                            queue.queue, queue.paused ? "paused" : "active", "\(queue.queued)", "\(queue.running)",
                            "\(queue.scheduled)", "\(queue.retrying)", "\(queue.dead)", global,
                        ]
                    }
                    print(table([header] + rows))
                }
                queue.redis.close()
            }
        }
    }

    struct Pause: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Workers take no new job of the queue (within about a second); enqueues are still accepted.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "Queue name.") var name: String

        func run() async throws {
            try await reportingErrors {
                let queue = try global.jobQueue(logger: Logger(label: "carbscan.cli"))
                try await QueueControl(queue: queue).pause(queue: name)
                print("\(name) paused")
                queue.redis.close()
            }
        }
    }

    struct Resume: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Workers take the queue's jobs again.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "Queue name.") var name: String

        func run() async throws {
            try await reportingErrors {
                let queue = try global.jobQueue(logger: Logger(label: "carbscan.cli"))
                try await QueueControl(queue: queue).resume(queue: name)
                print("\(name) resumed")
                queue.redis.close()
            }
        }
    }
}
