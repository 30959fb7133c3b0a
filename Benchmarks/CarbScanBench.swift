import ArgumentParser

/// The benchmarks' commands, apart from `carbscan` so that the product ships only what operators run. The scripts in
/// `ops/bench/` build and run them; what each measures is in `ops/bench/README.md`.
@main
struct CarbScanBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "carbscan-bench",
        abstract: "Benchmarks of the CarbScan backend (run by ops/bench/*.sh).",
        subcommands: [QueueBench.self, JobMemoryBench.self, HTTPInflightBench.self, HelloServer.self])
}
