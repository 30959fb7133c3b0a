// What binding a task-local costs a job's task, by where it is bound (ops/bench/task-locals.sh): no task-local; a
// value bound around the task's creation (the runtime copies every task-local into the new task); the same with a
// String in the value; the value captured by the task's closure instead; the value bound inside the task, around its
// body. Prints each variant's median CPU per task of 7 rounds of `count` tasks, in ns.
import Foundation
import Synchronization

struct Parent: Sendable {
    let high: UInt64
    let low: UInt64
    let span: UInt64
    let flags: UInt8
}

struct Carried: Sendable {
    let parent: Parent
    let state: String?
}

enum Bound {
    @TaskLocal static var parent: Parent?
    @TaskLocal static var carried: Carried?
}

final class Ended: Sendable {
    let count = Atomic<Int>(0)
}

func cpuNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

@inline(never) func body(_ ended: Ended, reads: Bool) {
    let flags = reads ? Int(Bound.parent?.flags ?? 0) + Int(Bound.carried?.parent.flags ?? 0) : 0
    ended.count.add(1 + flags, ordering: .relaxed)
}

@inline(never) func asyncBody(_ ended: Ended) async { body(ended, reads: true) }

let variants = ["none", "bound around creation", "bound around creation, with a String", "captured", "bound inside the task"]

func round(_ variant: Int, count: Int) async -> Double {
    let ended = Ended()
    let start = cpuNanoseconds()
    for index in 0..<count {
        let parent = Parent(high: UInt64(index), low: 2, span: 3, flags: 0)
        switch variant {
        case 1: Bound.$parent.withValue(parent) { _ = Task { body(ended, reads: true) } }
        case 2: Bound.$carried.withValue(Carried(parent: parent, state: nil)) { _ = Task { body(ended, reads: true) } }
        case 3: _ = Task { if parent.flags == 0 { body(ended, reads: false) } }
        case 4: _ = Task { await Bound.$parent.withValue(parent) { await asyncBody(ended) } }
        default: _ = Task { body(ended, reads: true) }
        }
        // At most a few hundred tasks at once, as a worker's slots allow.
        if index % 256 == 255 { while ended.count.load(ordering: .relaxed) < index - 64 { await Task.yield() } }
    }
    while ended.count.load(ordering: .relaxed) < count { await Task.yield() }
    return Double(cpuNanoseconds() - start) / Double(count)
}

@main struct TaskLocals {
    static func main() async {
        let count = Int(CommandLine.arguments.dropFirst().first ?? "") ?? 300_000
        var rounds = Array(repeating: [Double](), count: variants.count)
        for _ in 0..<7 {
            for variant in variants.indices { rounds[variant].append(await round(variant, count: count)) }
        }
        for (variant, name) in variants.enumerated() {
            let sorted = rounds[variant].sorted()
            print("\(name)|\(Int(sorted[3]))|\(sorted.map { String(Int($0)) }.joined(separator: " "))")
        }
    }
}
