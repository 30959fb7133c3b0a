import Foundation
import HTTPTypes
import JSON
import Queue
import Settings
import TestSupport
import Testing
import carbscan

@testable import API

/// The operators' dashboard at `/ops/`: off without credentials, Basic or a session from the sign-in form, every
/// action a POST with the session's CSRF token from this host, and each action's effect in Redis.
@Suite struct OpsDashboardTests {
    @Test func isNotFoundWithoutCredentialsConfigured() async throws {
        try await TestAPI.run { _, client in
            for path in ["/ops/", "/ops/login", "/ops/dead", "/ops/live.json", "/ops/assets/ops.css"] {
                let answer = try await client.ops(.get, path)
                #expect(answer.status == 404, "\(path)")
            }
            let signIn = try await client.ops(.post, "/ops/login", form: [("user", Ops.user), ("password", Ops.password)])
            #expect(signIn.status == 404)
        }
    }

    @Test func settingsNeedBothVariablesAndALongPassword() throws {
        #expect(throws: SettingError.self) { try APISettings(environment: ["OPS_USER": "ops"]) }
        #expect(throws: SettingError.self) { try APISettings(environment: ["OPS_PASSWORD": "a long enough password"]) }
        #expect(throws: SettingError.self) { try APISettings(environment: ["OPS_USER": "ops", "OPS_PASSWORD": "short"]) }
        #expect(try APISettings(environment: [:]).opsCredentials == nil)
        #expect(try APISettings(environment: EnvironmentReader(Ops.environment)).opsCredentials?.user == Ops.user)
    }

    @Test func asksForCredentials() async throws {
        try await TestAPI.run(environment: Ops.environment) { _, client in
            let page = try await client.ops(.get, "/ops/dead?q=noop", authorization: nil, headers: [.accept: "text/html"])
            #expect(page.status == 303)
            #expect(page.location == "/ops/login?next=%2Fops%2Fdead%3Fq%3Dnoop")
            let api = try await client.ops(.get, "/ops/live.json", authorization: nil)
            #expect(api.status == 401)
            #expect(api.headers[.wwwAuthenticate]?.hasPrefix("Basic ") == true)
            let wrong = try await client.ops(
                .get, "/ops/", authorization: "Basic " + Data("\(Ops.user):wrong password!".utf8).base64EncodedString())
            #expect(wrong.status == 401)
            let otherUser = try await client.ops(
                .get, "/ops/", authorization: "Basic " + Data("root:\(Ops.password)".utf8).base64EncodedString())
            #expect(otherUser.status == 401)
            let basic = try await client.ops(.get, "/ops/")
            #expect(basic.status == 200)
            #expect(basic.headers[.contentType] == "text/html; charset=utf-8")
            #expect(basic.text.contains("<h1>Overview</h1>"))
            // The login form and the assets need no credentials.
            #expect(try await client.ops(.get, "/ops/login", authorization: nil).status == 200)
            #expect(try await client.ops(.get, "/ops/assets/ops.js", authorization: nil).status == 200)
        }
    }

    @Test func signInSetsAStrictSessionCookieAndSignOutEndsIt() async throws {
        try await TestAPI.run(environment: Ops.environment) { _, client in
            let wrong = try await client.ops(
                .post, "/ops/login", authorization: nil, form: [("user", Ops.user), ("password", "not it at all"), ("next", "/ops/dead")])
            #expect(wrong.status == 401)
            #expect(wrong.headers[.setCookie] == nil)
            let signIn = try await client.ops(
                .post, "/ops/login", authorization: nil, form: [("user", Ops.user), ("password", Ops.password), ("next", "/ops/dead")])
            #expect(signIn.status == 303)
            #expect(signIn.location == "/ops/dead")
            let setCookie = try #require(signIn.headers[.setCookie])
            #expect(setCookie.contains("HttpOnly"))
            #expect(setCookie.contains("SameSite=Strict"))
            #expect(setCookie.contains("Path=/ops"))
            let cookie = String(setCookie.prefix { $0 != ";" })
            let page = try await client.ops(.get, "/ops/dead", authorization: nil, cookie: cookie)
            #expect(page.status == 200)
            let csrf = try #require(page.csrf)
            // A tampered cookie is no session.
            let tampered = try await client.ops(.get, "/ops/live.json", authorization: nil, cookie: cookie.dropLast(2) + "00")
            #expect(tampered.status == 401)

            let signOut = try await client.ops(.post, "/ops/logout", authorization: nil, cookie: cookie, form: [("csrf", csrf)])
            #expect(signOut.status == 303)
            #expect(signOut.headers[.setCookie]?.contains("Max-Age=0") == true)
            #expect(try await client.ops(.get, "/ops/live.json", authorization: nil, cookie: cookie).status == 401)
        }
    }

    @Test func nextAfterSignInStaysOnTheDashboard() {
        #expect(OpsRoutes.safeNext("https://evil.example/") == "/ops/")
        #expect(OpsRoutes.safeNext("//evil.example/ops/") == "/ops/")
        #expect(OpsRoutes.safeNext("/ops//evil.example") == "/ops/")
        #expect(OpsRoutes.safeNext("/ops/dead?q=noop") == "/ops/dead?q=noop")
    }

    @Test func actionsRefuseAMissingOrWrongTokenOrAnotherOrigin() async throws {
        try await TestAPI.run(environment: Ops.environment) { api, client in
            let ids = try await api.deadJobs(1)
            let page = try await client.ops(.get, "/ops/dead")
            let csrf = try #require(page.csrf)
            let missing = try await client.ops(.post, "/ops/dead/bulk", form: [("action", "retry"), ("id", ids[0].rawValue)])
            #expect(missing.status == 403)
            let wrong = try await client.ops(
                .post, "/ops/dead/bulk", form: [("csrf", String(csrf.reversed())), ("action", "retry"), ("id", ids[0].rawValue)])
            #expect(wrong.status == 403)
            let foreign = try await client.ops(
                .post, "/ops/dead/bulk", form: [("csrf", csrf), ("action", "retry"), ("id", ids[0].rawValue)],
                headers: [.origin: "https://evil.example"])
            #expect(foreign.status == 403)
            #expect(try await api.isDead(ids[0]))
            // A GET never acts.
            #expect(try await client.ops(.get, "/ops/dead/bulk?action=retry&id=\(ids[0].rawValue)").status != 303)
            #expect(try await api.isDead(ids[0]))
        }
    }

    @Test func bulkRetryAndDiscardAct() async throws {
        try await TestAPI.run(environment: Ops.environment) { api, client in
            let ids = try await api.deadJobs(3)
            let page = try await client.ops(.get, "/ops/dead")
            #expect(ids.allSatisfy { page.text.contains($0.rawValue) })
            let csrf = try #require(page.csrf)
            let retried = try await client.ops(
                .post, "/ops/dead/bulk", form: [("csrf", csrf), ("action", "retry"), ("id", ids[0].rawValue), ("id", ids[1].rawValue)],
                headers: [.origin: "http://localhost"])
            #expect(retried.status == 303)
            #expect(retried.location == "/ops/dead?done=retried&n=2")
            #expect(try await api.isDead(ids[0]) == false)
            #expect(try await api.isDead(ids[1]) == false)
            #expect(try await api.queue.record(ids[0])?.status == .queued)
            #expect(try await api.isDead(ids[2]))

            let discarded = try await client.ops(.post, "/ops/jobs/\(ids[2].rawValue)/discard", form: [("csrf", csrf)])
            #expect(discarded.status == 303)
            #expect(try await api.queue.record(ids[2]) == nil)
            #expect(try await client.ops(.get, "/ops/jobs/\(ids[2].rawValue)").status == 404)
        }
    }

    @Test func searchFindsByIdOrKindAndPages() async throws {
        try await TestAPI.run(environment: Ops.environment) { api, client in
            var ids: [JobID] = []
            for _ in 0..<30 {
                ids.append(try #require(try await api.queue.enqueue("noop", payload: [:], options: .init(delay: .seconds(3600))).id))
            }
            let first = try await client.ops(.get, "/ops/scheduled")
            #expect(first.text.components(separatedBy: #"name="id""#).count - 1 == 25)
            #expect(first.text.contains("/ops/scheduled?offset=25"))
            let second = try await client.ops(.get, "/ops/scheduled?offset=25")
            #expect(second.text.components(separatedBy: #"name="id""#).count - 1 == 5)
            let byID = try await client.ops(.get, "/ops/scheduled?q=\(ids[7].rawValue)")
            #expect(byID.text.components(separatedBy: #"name="id""#).count - 1 == 1)
            #expect(byID.text.contains(ids[7].rawValue))
            let byKind = try await api.queue.jobs(in: .scheduled, search: "noo")
            #expect(byKind.total == 30)
            #expect(try await api.queue.jobs(in: .scheduled, search: "email").total == 0)
        }
    }

    @Test func pauseResumeAndCancelAct() async throws {
        try await TestAPI.run(environment: Ops.environment) { api, client in
            let csrf = try #require(try await client.ops(.get, "/ops/queues").csrf)
            #expect(try await client.ops(.post, "/ops/queues/default/pause", form: [("csrf", csrf)]).status == 303)
            #expect(try await QueueControl(queue: api.queue).pausedQueues() == ["default"])
            let live = try await client.ops(.get, "/ops/live.json")
            let queues = try JSONValue(parsing: live.text)["queues"]
            guard case .array(let rows)? = queues else { throw TestSetupError("no queues in live.json") }
            #expect(rows.contains { $0["name"] == "default" && $0["paused"] == .bool(true) })
            #expect(try await client.ops(.post, "/ops/queues/default/resume", form: [("csrf", csrf)]).status == 303)
            #expect(try await QueueControl(queue: api.queue).pausedQueues().isEmpty)
            #expect(try await client.ops(.post, "/ops/queues/nope/pause", form: [("csrf", csrf)]).status == 404)

            let id = try #require(try await api.queue.enqueue("noop", payload: [:], options: .init(delay: .seconds(3600))).id)
            #expect(try await client.ops(.get, "/ops/jobs/\(id.rawValue)").text.contains("/cancel"))
            let cancelled = try await client.ops(
                .post, "/ops/scheduled/bulk", form: [("csrf", csrf), ("action", "cancel"), ("id", id.rawValue)])
            #expect(cancelled.location == "/ops/scheduled?done=cancelled&n=1")
            #expect(try await api.queue.record(id)?.status == .cancelled)
        }
    }

    @Test func jobPageRedactsSecretsAndShowsAttempts() async throws {
        try await TestAPI.run(environment: Ops.environment) { api, client in
            let id = try #require(
                try await api.queue.enqueue(
                    "noop",
                    payload: [
                        "fail": "permanent", "result": ["apiKey": "sk-live-123", "nested": [["Password": "hunter2"]], "kept": "visible"],
                    ]
                ).id)
            let (worker, task) = api.startWorker(queue: "default")
            _ = try await eventually { try await api.isDead(id) }
            worker.stop()
            try await task.value
            let page = try await client.ops(.get, "/ops/jobs/\(id.rawValue)")
            #expect(page.status == 200)
            #expect(!page.text.contains("sk-live-123"))
            #expect(!page.text.contains("hunter2"))
            #expect(page.text.contains("visible"))
            #expect(page.text.contains("[redacted]"))
            #expect(page.text.contains("noop asked to fail permanently"))
        }
    }

    /// A job whose producer traced (its record carries the trace context): its page names the trace, for the
    /// operator to look it up in the tracing backend.
    @Test func jobPageShowsItsTraceID() async throws {
        try await TestAPI.run(environment: Ops.environment) { api, client in
            let untraced = try #require(try await api.queue.enqueue("noop", payload: [:], options: .init(delay: .seconds(3600))).id)
            let traced = try #require(try await api.queue.enqueue("noop", payload: [:], options: .init(delay: .seconds(3600))).id)
            let key = try #require(try await api.queue.redis.send("KEYS", "*:job:\(traced.rawValue)").array?.first?.string)
            try await api.queue.redis.send(
                "HSET", key, "tp", "traceparent=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\ntracestate=rojo=1")
            let page = try await client.ops(.get, "/ops/jobs/\(traced.rawValue)")
            #expect(page.text.contains(#"data-trace-id="4bf92f3577b34da6a3ce929d0e0e4736""#), "\(page.text)")
            #expect(!(try await client.ops(.get, "/ops/jobs/\(untraced.rawValue)").text.contains("data-trace-id")))
        }
    }

    @Test func redactionIsCaseInsensitiveAndNested() throws {
        let value = try JSONValue(
            parsing: #"{"user":{"Refresh_Token":"r","profile":{"name":"n"}},"list":[{"AUTHORIZATION":"a"}],"secretKey":1}"#)
        let shown = Redaction.display(value.jsonString) ?? ""
        #expect(!shown.contains("\"r\"") && !shown.contains("\"a\"") && !shown.contains(": 1"))
        #expect(shown.contains("\"n\""))
        #expect(Redaction.display("not json password=x")?.contains("password") == false)
    }

    @Test func cronPageListsSchedules() async throws {
        try await TestAPI.run(environment: Ops.environment) { api, client in
            let spec = try #require(api.queue.catalog["scan-reset"])
            let schedule = try #require(spec.schedules.first)
            let fired = Date(timeIntervalSince1970: 1_790_000_000)
            _ = try await api.queue.fire(kind: spec.name, schedule: schedule, at: fired)
            let statuses = try await api.queue.cronSchedules()
            let status = try #require(statuses.first { $0.kind == spec.name && $0.name == schedule.name })
            #expect(status.lastFire == fired)
            #expect(status.nextFire.map { $0 > Date() } == true)
            let page = try await client.ops(.get, "/ops/cron")
            #expect(page.text.contains(OpsFormat.absolute(fired)))
        }
    }

    /// Latency is the age of the oldest job no worker took yet, per queue; zero when none waits.
    @Test func latencyIsTheAgeOfTheOldestWaitingJob() async throws {
        try await TestAPI.run(environment: Ops.environment) { api, client in
            let enqueued = Date()
            _ = try await api.queue.enqueue("noop", payload: [:])
            try await Task.sleep(for: .milliseconds(1200))
            let latencies = try await api.queue.latencies()
            let waited = try #require(latencies["default"])
            #expect(waited >= .seconds(1) && waited <= .seconds(Date().timeIntervalSince(enqueued) + 1))
            #expect(latencies["mail"] == .zero)
            let (worker, task) = api.startWorker(queue: "default")
            let drained = try await eventually { try await api.queue.stats().first { $0.queue == "default" }?.succeededTotal == 1 }
            worker.stop()
            try await task.value
            #expect(drained)
            #expect(try await api.queue.latencies()["default"] == .zero)
            let live = try await client.ops(.get, "/ops/live.json")
            #expect(live.text.contains(#""latencySeconds":0"#))
        }
    }

    /// A queue limited across processes shows its permits held of the limit, on the pages and in the live numbers;
    /// a queue without a limit shows none.
    @Test func queuesShowTheirPermitsHeldOfTheGlobalLimit() async throws {
        let jobs = FileManager.default.temporaryDirectory.appendingPathComponent("ops-permits-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: jobs, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: jobs) }
        let shipped = TestServices.repositoryRoot.appendingPathComponent("jobs")
        for file in try FileManager.default.contentsOfDirectory(atPath: shipped.path) where file.hasSuffix(".yml") {
            var text = try String(contentsOf: shipped.appendingPathComponent(file), encoding: .utf8)
            if file == "noop.yml" { text += "\nglobal_limit: 3\n" }
            try text.write(to: jobs.appendingPathComponent(file), atomically: true, encoding: .utf8)
        }
        try await TestAPI.run(environment: Ops.environment, jobsDirectory: jobs.path) { api, client in
            let queue = "default"
            #expect(api.queue.catalog.globalLimits[queue] == 3)
            let page = try await client.ops(.get, "/ops/queues")
            #expect(page.text.contains(#"<td class="num" data-live="permits">0 / 3</td>"#))
            #expect(page.text.contains(#"<td class="num" data-live="permits">–</td>"#))
            // A worker holding a permit for a running job: the count follows.
            _ = try await api.queue.enqueue("noop", payload: ["sleepMs": 3000])
            let (worker, task) = api.startWorker(queue: queue)
            let held = try await eventually {
                try await client.ops(.get, "/ops/live.json").text.contains(#""permits":"1 \/ 3""#)
            }
            worker.stop()
            try await task.value
            #expect(held)
            let overview = try await client.ops(.get, "/ops/")
            #expect(overview.text.contains(#"data-live="permits">0 / 3<"#))
        }
    }
}
