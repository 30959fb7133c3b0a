import Foundation
import Queue
import Redis
import TestSupport

/// Runs the built `carbscan` executable as operators do: real processes, real signals, the real Redis.
enum CarbScanBinary {
    static let packageRoot = TestServices.repositoryRoot

    static var url: URL {
        if let path = ProcessInfo.processInfo.environment["CARBSCAN_BIN"] { return URL(fileURLWithPath: path) }
        return packageRoot.appendingPathComponent(".build/debug/carbscan")
    }

    /// A jobs folder: the project's kind files, with `noop.yml` replaced when `noop` is given (e.g. short leases).
    static func jobsDirectory(noop: String? = nil) throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("carbscan-jobs-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for file in try FileManager.default.contentsOfDirectory(atPath: packageRoot.appendingPathComponent("jobs").path) {
            try FileManager.default.copyItem(
                at: packageRoot.appendingPathComponent("jobs/\(file)"), to: directory.appendingPathComponent(file))
        }
        if let noop {
            try noop.write(to: directory.appendingPathComponent("noop.yml"), atomically: true, encoding: .utf8)
        }
        return directory
    }

    /// Starts `carbscan ARGS`; output goes to a log file the test can read. `shell`: bash commands run first, in the
    /// same process (`ulimit -n 400`), which then becomes the binary.
    static func start(_ arguments: [String], environment extra: [String: String], shell: String? = nil) throws -> RunningProcess {
        let process = Process()
        if let shell {
            process.executableURL = URL(fileURLWithPath: "/bin/bash")
            process.arguments = ["-c", "\(shell) && exec \"$0\" \"$@\"", url.path] + arguments
        } else {
            process.executableURL = url
            process.arguments = arguments
        }
        var environment = ProcessInfo.processInfo.environment
        environment["LOG_LEVEL"] = "info"
        for (key, value) in extra { environment[key] = value }
        process.environment = environment
        return try RunningProcess.run(process, logNamed: "carbscan")
    }

    /// Runs `carbscan ARGS` to completion. Output goes through files, not pipes: a pipe's write end inherited by
    /// a long-lived worker another test spawned at the same moment would keep a reader waiting for ever, and
    /// waiting is done by polling so no cooperative thread blocks.
    /// A run still going after `timeout` is killed (status 137), so a command that should have stopped fails its test
    /// instead of hanging it.
    static func run(
        _ arguments: [String], environment: [String: String], timeout: Duration = .seconds(120)
    ) async throws -> (status: Int32, stdout: String, stderr: String) {
        let process = Process()
        process.executableURL = url
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        for (key, value) in environment { env[key] = value }
        process.environment = env
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("carbscan-run-\(UUID().uuidString)")
        let outURL = base.appendingPathExtension("out")
        let errURL = base.appendingPathExtension("err")
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        defer {
            try? FileManager.default.removeItem(at: outURL)
            try? FileManager.default.removeItem(at: errURL)
        }
        let out = try FileHandle(forWritingTo: outURL)
        let err = try FileHandle(forWritingTo: errURL)
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = out
        process.standardError = err
        try process.run()
        try? out.close()
        try? err.close()
        let deadline = ContinuousClock.now + timeout
        while process.isRunning {
            if ContinuousClock.now > deadline {
                kill(process.processIdentifier, SIGKILL)
                while process.isRunning { try await Task.sleep(for: .milliseconds(10)) }
                return (137, "", "killed after \(timeout): still running")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        return (
            process.terminationStatus, (try? String(contentsOf: outURL, encoding: .utf8)) ?? "",
            (try? String(contentsOf: errURL, encoding: .utf8)) ?? ""
        )
    }

    /// A port free now, chosen at random below the kernel's ephemeral range (32768 and up here): a port the kernel
    /// handed out for port 0 was sometimes taken again by another test's listener or outgoing connection before the
    /// binary bound it (a serve test got another server's 404).
    static func freePort() -> Int { PrivateRedis.freeLoopbackPort() }
}

struct RunningProcess {
    let process: Process
    let log: URL

    var pid: Int32 { process.processIdentifier }
    var output: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }

    func signal(_ signal: Int32) { kill(process.processIdentifier, signal) }

    /// Runs `process` with no input, its output and errors going to a new log file named `<prefix>-<uuid>.log`.
    static func run(_ process: Process, logNamed prefix: String) throws -> RunningProcess {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        return RunningProcess(process: process, log: log)
    }

    /// Waits for the exit; returns the status, or nil when it did not exit in time (then it is killed).
    func waitForExit(timeout: Duration) async -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning && ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(20)) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            while process.isRunning { try? await Task.sleep(for: .milliseconds(20)) }
            return nil
        }
        return process.terminationStatus
    }
}

/// Deletes every key under `prefix`.
func removeKeys(prefix: String, redis: RedisClient) async {
    _ = try? await redis.unlinkKeys(matching: "\(prefix):*")
}

extension JobQueue {
    func defaultStats() async throws -> QueueStats {
        try await stats().first { $0.queue == "default" }!
    }

    /// Consumers registered in the default queue's group (a worker registers on its first read).
    func consumers() async throws -> Int {
        (try? await redis.send(["XINFO", "CONSUMERS", keys("default").stream, QueueKeys.group]))?.array?.count ?? 0
    }
}
