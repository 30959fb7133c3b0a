import ArgumentParser
import Foundation
import Logging
import Queue

struct QueuesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "queues", abstract: "List the queues with their paused state; pause or resume one.",
        subcommands: [List.self, Pause.self, Resume.self], defaultSubcommand: List.self)

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Per queue: paused, queued, running, scheduled, retrying, dead.")
        @OptionGroup var global: GlobalOptions
        @Flag(help: "Print JSON.") var json = false

        func run() async throws {
            try await reportingErrors {
                let queue = try global.jobQueue(logger: Logger(label: "carbscan.cli"))
                let queues = try await QueueControl(queue: queue).overview()
                if json {
                    print(try jsonText(queues))
                } else {
                    let header = ["queue", "state", "queued", "running", "scheduled", "retrying", "dead"]
                    let rows = queues.map {
                        [
                            $0.queue, $0.paused ? "paused" : "active", "\($0.queued)", "\($0.running)", "\($0.scheduled)",
                            "\($0.retrying)", "\($0.dead)",
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
