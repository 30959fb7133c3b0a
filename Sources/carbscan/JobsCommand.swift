import ArgumentParser
import Foundation
import JSON
import Logging
import Queue

struct JobsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "jobs", abstract: "Enqueue, inspect, retry and cancel jobs.",
        subcommands: [Enqueue.self, Stats.self, Show.self, Retry.self, Cancel.self, Dead.self])

    struct Enqueue: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Enqueue jobs; prints their ids.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "Job kind (a file in jobs/).") var kind: String
        @Option(help: "Payload as JSON; checked against the kind's schema.") var payload: String = "{}"
        @Option(help: "How many copies to enqueue (in bulk).") var count: Int = 1
        @Option(help: "Seconds to wait before the job may run.") var delay: Double?
        @Option(help: "Uniqueness key: not enqueued while a job holds it.") var unique: String?

        func validate() throws {
            guard count >= 1 && count <= 1_000_000 else { throw ValidationError("--count must be 1…1000000") }
            if let delay, !(delay >= 0 && delay <= 366 * 86_400) { throw ValidationError("--delay must be 0…31622400 seconds") }
            if unique != nil && count > 1 { throw ValidationError("--unique and --count > 1 contradict each other") }
        }

        func run() async throws {
            try await reportingErrors {
                let queue = try global.jobQueue(logger: .cli)
                let value: JSONValue
                do {
                    value = try JSONValue(parsing: payload)
                } catch {
                    throw CLIError("--payload is not valid JSON: \(error)", exitCode: 65)
                }
                let options = EnqueueOptions(delay: delay.map { .milliseconds(Int64($0 * 1000)) }, uniqueKey: unique)
                let results = try await queue.enqueue(Array(repeating: (kind, value, options), count: count))
                var out = ""
                for result in results {
                    switch result {
                    case .enqueued(let id): out += "\(id)\n"
                    case .duplicate(let holder): out += "duplicate of \(holder?.rawValue ?? "a job that just finished")\n"
                    case .alreadyFired: out += "already fired\n"
                    }
                }
                FileHandle.standardOutput.write(Data(out.utf8))
                queue.redis.close()
            }
        }
    }

    struct Stats: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Per queue: queued, running, scheduled, retrying, dead, totals.")
        @OptionGroup var global: GlobalOptions
        @Flag(help: "Print JSON.") var json = false

        func run() async throws {
            try await reportingErrors {
                let queue = try global.jobQueue(logger: .cli)
                let stats = try await queue.stats()
                if json {
                    print(try jsonText(stats))
                } else {
                    let header = ["queue", "queued", "running", "scheduled", "retrying", "dead", "succeeded", "failed", "retried"]
                    let rows = stats.map {
                        [
                            $0.queue, "\($0.queued)", "\($0.running)", "\($0.scheduled)", "\($0.retrying)", "\($0.dead)",
                            "\($0.succeededTotal)", "\($0.failedTotal)", "\($0.retriedTotal)",
                        ]
                    }
                    print(table([header] + rows))
                }
                queue.redis.close()
            }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show one job's record.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "Job id.") var id: String
        @Flag(help: "Print JSON.") var json = false

        func run() async throws {
            try await reportingErrors {
                let queue = try global.jobQueue(logger: .cli)
                let jobID = try parseJobID(id)
                guard let record = try await queue.record(jobID, searchingStreams: true) else {
                    throw CLIError("no job \(id) (unknown, or expired by retention)", exitCode: 4)
                }
                if json {
                    print(try jsonText(record))
                } else {
                    print(describe(record))
                }
                queue.redis.close()
            }
        }
    }

    struct Retry: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Run a dead, retrying or delayed job now.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "Job id.") var id: String

        func run() async throws {
            try await reportingErrors {
                let queue = try global.jobQueue(logger: .cli)
                let jobID = try parseJobID(id)
                let from = try await queue.retryNow(jobID)
                print("\(jobID) queued (was in the \(from) set)")
                queue.redis.close()
            }
        }
    }

    struct Cancel: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Cancel a job: a waiting one never runs; a running one has its task cancelled by its worker.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "Job id.") var id: String

        func run() async throws {
            try await reportingErrors {
                let queue = try global.jobQueue(logger: .cli)
                let jobID = try parseJobID(id)
                switch try await queue.cancel(jobID) {
                case .queued: print("\(jobID) cancelled (it was queued)")
                case .scheduled: print("\(jobID) cancelled (it was delayed)")
                case .retrying: print("\(jobID) cancelled (it was waiting for a retry)")
                case .running(let process):
                    print("\(jobID) is running in \(process.isEmpty ? "a worker" : process): told to cancel it; no later delivery runs it")
                }
                queue.redis.close()
            }
        }
    }

    struct Dead: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The dead set: list, retry, discard.", subcommands: [List.self, RetryDead.self, Discard.self])

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "List dead jobs, newest first.")
            @OptionGroup var global: GlobalOptions
            @Option(help: "At most this many.") var limit: Int = 50
            @Flag(help: "Print JSON.") var json = false

            func run() async throws {
                try await reportingErrors {
                    let queue = try global.jobQueue(logger: .cli)
                    let records = try await queue.deadJobs(limit: max(1, limit))
                    if json {
                        print(try jsonText(records))
                    } else {
                        let rows = records.map { r in
                            [
                                r.id.rawValue, r.kind, r.queue, "\(r.attempts)", r.finishedAt.map(iso) ?? "",
                                String((r.error ?? "").prefix(80)),
                            ]
                        }
                        print(table([["id", "kind", "queue", "attempts", "died", "error"]] + rows))
                    }
                    queue.redis.close()
                }
            }
        }

        struct RetryDead: AsyncParsableCommand {
            static let configuration = CommandConfiguration(commandName: "retry", abstract: "Retry one dead job, or all.")
            @OptionGroup var global: GlobalOptions
            @Argument(help: "Job id.") var id: String?
            @Flag(help: "Retry every dead job.") var all = false

            func validate() throws {
                if (id == nil) == !all { throw ValidationError("give a job id or --all") }
            }

            func run() async throws {
                try await reportingErrors {
                    let queue = try global.jobQueue(logger: .cli)
                    if all {
                        print("\(try await queue.retryAllDead()) jobs queued")
                    } else {
                        let jobID = try parseJobID(id!)
                        guard let record = try await queue.record(jobID), record.inDeadSet else {
                            throw CLIError("job \(id!) is not in the dead set", exitCode: 4)
                        }
                        try await queue.retryNow(jobID)
                        print("\(jobID) queued")
                    }
                    queue.redis.close()
                }
            }
        }

        struct Discard: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Delete a dead job for good.")
            @OptionGroup var global: GlobalOptions
            @Argument(help: "Job id.") var id: String

            func run() async throws {
                try await reportingErrors {
                    let queue = try global.jobQueue(logger: .cli)
                    let jobID = try parseJobID(id)
                    try await queue.discardDead(jobID)
                    print("\(jobID) discarded")
                    queue.redis.close()
                }
            }
        }
    }
}

func parseJobID(_ text: String) throws -> JobID {
    guard let id = JobID(rawValue: text) else { throw CLIError("'\(text)' is not a job id (a UUID)", exitCode: 65) }
    return id
}

func jsonText<T: Encodable>(_ value: T) throws -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    encoder.dateEncodingStrategy = .iso8601
    return String(decoding: try encoder.encode(value), as: UTF8.self)
}

func iso(_ date: Date) -> String { ISO8601DateFormatter().string(from: date) }

func table(_ rows: [[String]]) -> String {
    guard let first = rows.first else { return "" }
    let widths = (0..<first.count).map { column in rows.map { $0[column].count }.max() ?? 0 }
    return rows.map { row in
        zip(row, widths).map { $0.padding(toLength: $1, withPad: " ", startingAt: 0) }.joined(separator: "  ")
            .trimmingCharacters(in: .whitespaces)
    }.joined(separator: "\n")
}

func describe(_ r: JobRecord) -> String {
    var lines = [
        "id:          \(r.id)", "kind:        \(r.kind)", "queue:       \(r.queue)",
        "status:      \(r.status.rawValue)\(r.inDeadSet ? " (in the dead set)" : "")",
        "attempts:    \(r.attempts) of \(r.maxAttempts)", "enqueued:    \(iso(r.enqueuedAt))",
    ]
    if let d = r.runAt { lines.append("runs at:     \(iso(d))") }
    if let d = r.scheduledFor { lines.append("cron fire:   \(iso(d))") }
    if let d = r.startedAt { lines.append("started:     \(iso(d))") }
    if let d = r.finishedAt { lines.append("finished:    \(iso(d))") }
    if let w = r.worker { lines.append("worker:      \(w)") }
    if let u = r.uniqueKey { lines.append("unique key:  \(u)") }
    if let t = r.traceID { lines.append("trace:       \(t)") }
    lines.append("payload:     \(r.payload)")
    if let result = r.result { lines.append("result:      \(result)") }
    if let error = r.error { lines.append("error:       \(error)") }
    for e in r.errors { lines.append("  attempt \(e.attempt) at \(iso(e.at)): \(e.error)") }
    return lines.joined(separator: "\n")
}
