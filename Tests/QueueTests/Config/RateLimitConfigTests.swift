import Foundation
import Testing

@testable import Queue

@Suite struct RateLimitConfigTests {
    @Test func rateLimitIsParsed() throws {
        let spec = try JobKindSpec(yaml: "rate_limit: { name: ai, per_second: 5, burst: 10 }\n", name: "analysis", file: "a.yml")
        #expect(spec.rateLimit == RateLimit(name: "ai", perSecond: 5, burst: 10))
        let fractional = try JobKindSpec(yaml: "rate_limit: { name: slow-api, per_second: 0.5 }\n", name: "a", file: "a.yml")
        // Without a burst, one second's worth may go at once, and never less than one call.
        #expect(fractional.rateLimit == RateLimit(name: "slow-api", perSecond: 0.5, burst: 1))
        let rounded = try JobKindSpec(yaml: "rate_limit: { name: ai, per_second: 2.5 }\n", name: "a", file: "a.yml")
        #expect(rounded.rateLimit?.burst == 3)
        #expect(try JobKindSpec(yaml: "{}", name: "a", file: "a.yml").rateLimit == nil)
    }

    @Test(
        arguments: [
            ("rate_limit: { per_second: 5 }\n", 1, 13, "rate_limit: missing 'name'"),
            ("rate_limit: { name: ai }\n", 1, 13, "rate_limit: missing 'per_second'"),
            ("rate_limit: { name: AI, per_second: 5 }\n", 1, 21, "rate_limit.name: 'AI' is not a valid bucket name"),
            ("rate_limit: { name: ai, per_second: 0 }\n", 1, 37, "rate_limit.per_second: must be from 0.001 to 1000000, got 0"),
            ("rate_limit: { name: ai, per_second: fast }\n", 1, 37, "rate_limit.per_second: expected a positive number, got 'fast'"),
            ("rate_limit: { name: ai, per_second: 5, burst: 0 }\n", 1, 47, "rate_limit.burst: must be from 1 to 1000000, got 0"),
            ("rate_limit: { name: ai, per_second: 5, burst: 2000000 }\n", 1, 47, "rate_limit.burst: must be from 1"),
            ("rate_limit: { name: ai, per_second: 5, burst: 2.5 }\n", 1, 47, "rate_limit.burst: expected an integer of at least 1"),
            ("rate_limit: { name: ai, per_second: 5, brst: 2 }\n", 1, 40, "unknown key 'brst'; did you mean 'burst'?"),
            ("queue: a\nrate_limit: 5\n", 2, 13, "rate_limit: expected a mapping of name, per_second, burst"),
        ] as [(String, Int, Int, String)])
    func invalidRateLimitsAreRefusedWithTheirPosition(yaml: String, line: Int, column: Int, reason: String) throws {
        let error = try #require(loadError(yaml))
        #expect(error.file == "jobs/sample.yml")
        #expect(error.reason.contains(reason), "\(error)")
        #expect(error.line == line, "\(error)")
        #expect(error.column == column, "\(error)")
    }

    /// The AI kinds share one provider budget; the login webhook has its own.
    @Test func repositoryKindsDeclareTheirBuckets() throws {
        let catalog = try JobCatalog.load(directory: repositoryJobsDirectory())
        #expect(catalog["analysis"]?.rateLimit?.name == "ai")
        #expect(catalog["chat"]?.rateLimit == catalog["analysis"]?.rateLimit)
        #expect(catalog["login-webhook"]?.rateLimit?.name == "login-webhook")
        #expect(catalog["noop"]?.rateLimit == nil)
    }
}
