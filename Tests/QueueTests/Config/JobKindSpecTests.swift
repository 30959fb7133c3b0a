import Foundation
import Testing

@testable import Queue

@Suite struct JobKindSpecTests {
    @Test func everyFieldIsParsed() throws {
        let yaml = """
            # a comment
            queue: ai
            priority: 10
            timeout: 60s
            visibility_timeout: 90s
            attempts: 4
            backoff: { type: exponential, base: 2s, max: 5m, jitter: 0.25 }
            unique: { key: "analysis:${photoId}", ttl: 1h }
            retention: { succeeded: 12h, failed: 7d }
            schedules:
              - { name: daily, cron: "0 0 * * *", timezone: UTC, payload: { scope: daily } }
              - name: berlin-morning
                cron: "30 7 * * mon-fri"
                timezone: Europe/Berlin
            payload:
              type: object
              properties:
                photoId: { type: string, format: uuid }
                scope: { type: string, enum: [daily] }
            """
        let spec = try JobKindSpec(yaml: yaml, name: "analysis", file: "jobs/analysis.yml")
        #expect(spec.name == "analysis")
        #expect(spec.file == "jobs/analysis.yml")
        #expect(spec.queue == "ai")
        #expect(spec.priority == 10)
        #expect(spec.timeout == .seconds(60))
        #expect(spec.visibilityTimeout == .seconds(90))
        #expect(spec.maxAttempts == 4)
        #expect(spec.backoff == .exponential(base: .seconds(2), max: .seconds(300), jitter: 0.25))
        #expect(spec.uniqueness == Uniqueness(keyTemplate: "analysis:${photoId}", ttl: .seconds(3_600)))
        #expect(spec.retention == Retention(succeeded: .seconds(43_200), failed: .seconds(604_800)))
        #expect(spec.schedules.map(\.name) == ["daily", "berlin-morning"])
        #expect(spec.schedules.first?.payload == ["scope": "daily"])
        #expect(spec.schedules.first?.timeZone.secondsFromGMT(for: .now) == 0)  // Linux names it "GMT"
        #expect(spec.schedules.first?.expression.description == "0 0 * * *")
        #expect(spec.schedules.last?.timeZone.identifier == "Europe/Berlin")
        #expect(spec.schedules.last?.payload == [:])
        #expect(spec.payloadSchema.declaredProperties == ["photoId", "scope"])
        #expect(spec.payloadSchema.validate(["photoId": "x"]).map(\.path) == ["/photoId"])
        #expect(spec.payloadSchema.validate(["photoId": "3f2504e0-4f89-11d3-9a0c-0305e82c3301"]).isEmpty)
    }

    @Test func defaults() throws {
        for yaml in ["{}", "payload: { type: object }", "# only a comment\nqueue: default\n"] {
            let spec = try JobKindSpec(yaml: yaml, name: "plain", file: "jobs/plain.yml")
            #expect(spec.queue == "default")
            #expect(spec.priority == 1)
            #expect(spec.timeout == .seconds(30))
            #expect(spec.visibilityTimeout == .seconds(30))
            #expect(spec.maxAttempts == 5)
            #expect(spec.backoff == .exponential(base: .seconds(1), max: .seconds(600), jitter: 0.2))
            #expect(spec.uniqueness == nil)
            #expect(spec.retention == Retention(succeeded: .seconds(86_400), failed: .seconds(2_592_000)))
            #expect(spec.schedules.isEmpty)
            #expect(spec.payloadSchema.validate(["anything": [1, 2]]).isEmpty)
            #expect(spec.payloadSchema.validate("not an object").count == 1)
        }
    }

    @Test func backoffVariants() throws {
        let fixed = try JobKindSpec(yaml: "backoff: { type: fixed, delay: 10s }", name: "a", file: "a.yml")
        #expect(fixed.backoff == .fixed(.seconds(10)))
        let jittered = try JobKindSpec(yaml: "backoff: { type: fixed, delay: 500ms, jitter: 1 }", name: "a", file: "a.yml")
        #expect(jittered.backoff == .fixed(.milliseconds(500), jitter: 1))
        let partial = try JobKindSpec(yaml: "backoff: { type: exponential, max: 1m }", name: "a", file: "a.yml")
        #expect(partial.backoff == .exponential(base: .seconds(1), max: .seconds(60), jitter: 0.2))
    }

    @Test func configErrorDescriptionReadsLikeACompilerDiagnostic() {
        let error = loadError("queue: ai\ntimeout: abc\n", name: "analysis")
        #expect(
            error?.description
                == "jobs/analysis.yml:2:10: timeout: expected a duration such as 500ms, 30s, 5m, 1h, 2d; got 'abc'")
        #expect(ConfigError(file: "x.yml", reason: "r").description == "x.yml: r")
    }

    @Test(
        arguments: [
            // (yaml, line, column, substring of the reason)
            ("queue: ai\nvisibilty_timeout: 90s\n", 2, 1, "unknown key 'visibilty_timeout'; did you mean 'visibility_timeout'?"),
            ("timeout: 30\n", 1, 10, "timeout: expected a duration such as 500ms, 30s, 5m, 1h, 2d; got '30' (a bare number has no unit)"),
            ("timeout: 0s\n", 1, 10, "timeout: must be greater than zero"),
            ("timeout: -5s\n", 1, 10, "got '-5s'"),
            ("timeout: [1]\n", 1, 10, "got a list"),
            ("queue: a\n\nvisibility_timeout: 2s\n", 3, 21, "visibility_timeout: must be at least 3s"),
            ("priority: 0\n", 1, 11, "priority: must be from 1 to 100, got 0"),
            ("priority: 101\n", 1, 11, "got 101"),
            ("priority: high\n", 1, 11, "priority: expected an integer from 1 to 100, got 'high'"),
            ("priority: 1.5\n", 1, 11, "expected an integer"),
            ("attempts: 0\n", 1, 11, "attempts: must be at least 1, got 0"),
            ("queue: AI\n", 1, 8, "'AI' is not a valid queue name"),
            ("queue:\n", 1, 7, "queue: expected a queue name, got null"),
            ("backoff: { type: linear }\n", 1, 18, "backoff.type: expected exponential or fixed, got 'linear'"),
            ("backoff: { base: 1s }\n", 1, 10, "backoff: missing 'type'"),
            ("backoff:\n  type: fixed\n  base: 1s\n  delay: 2s\n", 3, 3, "'base' does not apply to a fixed backoff"),
            ("backoff: { type: fixed }\n", 1, 10, "backoff: missing 'delay'"),
            ("backoff: { type: exponential, jitter: 1.5 }\n", 1, 39, "backoff.jitter: must be from 0 to 1"),
            ("backoff: { type: exponential, base: 1m, max: 10s }\n", 1, 46, "backoff.max: is below backoff.base"),
            ("backoff: { type: exponential, bse: 1s }\n", 1, 31, "unknown key 'bse'; did you mean 'base'?"),
            ("unique: { key: \"a:${id}\" }\n", 1, 9, "unique: missing 'ttl'"),
            ("unique: { key: \"a:${id\", ttl: 1m }\n", 1, 16, "unclosed '${'"),
            (
                "unique: { key: \"a:${nope}\", ttl: 1m }\npayload: { type: object, additionalProperties: false, properties: { id: {} } }\n",
                1, 16,
                "'${nope}' is not a property of the payload schema"
            ),
            ("retention: { succeeded: 1h, failed: forever }\n", 1, 37, "retention.failed: expected a duration"),
            ("retention: 1h\n", 1, 12, "retention: expected a mapping of succeeded, failed"),
            ("schedules:\n  - { name: a, cron: \"0 0 * *\" }\n", 2, 22, "schedules[0].cron: invalid cron expression: expected 5 fields"),
            ("schedules:\n  - { name: a, cron: \"61 0 * * *\" }\n", 2, 22, "minute '61': value 61 out of range 0-59"),
            ("schedules:\n  - { name: a, cron: \"@daily\", timezone: Mars/Base }\n", 2, 42, "unknown time zone 'Mars/Base'"),
            ("schedules:\n  - { name: a, cron: \"@daily\" }\n  - { name: a, cron: \"@hourly\" }\n", 3, 13, "duplicate schedule name 'a'"),
            ("schedules:\n  - { name: A, cron: \"@daily\" }\n", 2, 13, "not a valid schedule name"),
            ("schedules:\n  - { cron: \"@daily\" }\n", 2, 5, "schedules[0]: missing 'name'"),
            ("schedules:\n  - { name: a, cron: \"@daily\", when: now }\n", 2, 32, "schedules[0]: unknown key 'when'"),
            ("schedules: { name: a }\n", 1, 12, "schedules: expected a list of schedules"),
            (
                """
                schedules:
                  - name: a
                    cron: "@daily"
                    payload:
                      scope: weekly
                payload:
                  type: object
                  properties:
                    scope: { enum: [daily, monthly] }
                """, 5, 14,
                "schedules[0].payload does not satisfy the payload schema: /scope must be one of \"daily\", \"monthly\"; got \"weekly\""
            ),
            (
                "schedules:\n  - { name: a, cron: \"@daily\" }\npayload: { type: object, required: [scope] }\n", 2, 5,
                "the schedule needs a 'payload'"
            ),
            (
                "payload:\n  type: object\n  properties:\n    id: { type: string, format: uid }\n", 4, 33,
                "payload/properties/id/format: unknown format \"uid\""
            ),
            ("payload:\n  type: object\n  requird: [id]\n", 3, 3, "payload/requird: unknown schema keyword 'requird'"),
            ("result:\n  type: object\n  requird: [id]\n", 3, 3, "result/requird: unknown schema keyword 'requird'"),
            ("payload:\n  type: string\n", 2, 3, "payload: the payload schema must say 'type: object'"),
            ("payload: { type: object, properties: { n: { maximum: .inf } } }\n", 1, 54, "not a finite number"),
            ("queue: a\nqueue: b\n", 1, 1, "duplicate key 'queue'"),
            ("queue: [a\n", 2, 1, "invalid YAML"),
            ("- queue: a\n", 1, 1, "expected a mapping of queue, queue_limit, global_limit, shards, priority"),
            ("just text\n", 1, 1, "expected a mapping"),
        ] as [(String, Int, Int, String)])
    func errorsPointAtTheNode(yaml: String, line: Int, column: Int, reason: String) throws {
        let error = try #require(loadError(yaml))
        #expect(error.file == "jobs/sample.yml")
        #expect(error.reason.contains(reason), "\(error)")
        #expect(error.line == line, "\(error)")
        #expect(error.column == column, "\(error)")
    }

    @Test func theResultSchemaIsParsed() throws {
        let yaml = "result: { type: object, required: [sent], properties: { sent: { type: boolean } } }\n"
        let spec = try JobKindSpec(yaml: yaml, name: "mail", file: "jobs/mail.yml")
        #expect(spec.resultSchema?.validate(["sent": true]) == [])
        #expect(spec.resultSchema?.validate([:]).map(\.path) == ["/sent"])
        // A result need not be an object, and a kind need not declare one.
        #expect(try JobKindSpec(yaml: "result: { type: string }\n", name: "a", file: "a.yml").resultSchema?.validate("x") == [])
        #expect(try JobKindSpec(yaml: "{}", name: "a", file: "a.yml").resultSchema == nil)
    }

    @Test func emptyFileAndBadKindName() throws {
        for yaml in ["", "# nothing but a comment\n"] {
            let error = try #require(loadError(yaml))
            #expect(error.reason.contains("the file is empty"))
            #expect(error.line == nil)
        }
        let badName = try #require(loadError("{}", name: "Bad_Name"))
        #expect(badName.reason.contains("'Bad_Name' is not a valid job kind name"))
    }

    @Test func yamlOnePointOneBooleansStayStrings() throws {
        let spec = try JobKindSpec(
            yaml:
                "schedules:\n  - { name: a, cron: \"@daily\", payload: { answer: no } }\npayload: { type: object, properties: { answer: { enum: [yes, no] } } }\n",
            name: "a", file: "a.yml")
        #expect(spec.schedules.first?.payload == ["answer": "no"])
    }
}
