import Testing

@testable import Queue

@Suite struct BackoffTests {
    @Test func exponentialDoublesFromBaseAndStopsAtTheCap() {
        let backoff = Backoff.exponential(base: .seconds(1), max: .seconds(600), jitter: 0)
        let delays = (1...11).map { backoff.delay(afterAttempt: $0) }
        #expect(delays == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 600].map { Duration.seconds($0) })
        #expect(backoff.delay(afterAttempt: 0) == .seconds(1))
        #expect(backoff.delay(afterAttempt: 10_000) == .seconds(600))
        #expect(backoff.delay(afterAttempt: .max) == .seconds(600))
    }

    @Test func jitterStaysWithinItsFractionAndVaries() {
        let backoff = Backoff.exponential(base: .seconds(2), max: .seconds(300), jitter: 0.2)
        var rng = SeededGenerator(seed: 42)
        var seen = Set<Duration>()
        for attempt in 1...12 {
            let ceiling = backoff.maximumDelay(afterAttempt: attempt)
            for _ in 0..<50 {
                let delay = backoff.delay(afterAttempt: attempt, using: &rng)
                #expect(delay <= ceiling)
                #expect(delay >= ceiling * 0.8)
                seen.insert(delay)
            }
        }
        #expect(seen.count > 100)  // actually randomised
    }

    @Test func sameSeedSameDelays() {
        let backoff = Backoff.exponential(base: .seconds(1), max: .seconds(60), jitter: 0.5)
        var first = SeededGenerator(seed: 7)
        var second = SeededGenerator(seed: 7)
        let a = (1...8).map { backoff.delay(afterAttempt: $0, using: &first) }
        let b = (1...8).map { backoff.delay(afterAttempt: $0, using: &second) }
        #expect(a == b)
    }

    @Test func fixedIgnoresTheAttempt() {
        let backoff = Backoff.fixed(.seconds(10))
        #expect((1...20).allSatisfy { backoff.delay(afterAttempt: $0) == .seconds(10) })
        let jittered = Backoff.fixed(.seconds(10), jitter: 0.5)
        var rng = SeededGenerator(seed: 1)
        for _ in 0..<200 {
            let delay = jittered.delay(afterAttempt: 3, using: &rng)
            #expect(delay >= .seconds(5) && delay <= .seconds(10))
        }
    }

    @Test func outOfRangeJitterIsClamped() {
        let backoff = Backoff.exponential(base: .seconds(4), max: .seconds(4), jitter: 5)
        #expect(backoff == .exponential(base: .seconds(4), max: .seconds(4), jitter: 1))
        var rng = SeededGenerator(seed: 3)
        for _ in 0..<100 {
            let delay = backoff.delay(afterAttempt: 1, using: &rng)
            #expect(delay >= .zero && delay <= .seconds(4))
        }
    }
}
