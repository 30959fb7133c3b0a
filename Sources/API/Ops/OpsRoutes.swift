import Foundation
import HTTPTypes
import Hummingbird
import JSON
import Queue

/// The operators' dashboard at `/ops/`: server-rendered pages over the queue engine's operator views, registered
/// only when `OPS_USER`/`OPS_PASSWORD` are set (otherwise every `/ops/*` path is the router's 404). Reads are GETs;
/// every action is a POST with the session's CSRF token from a page of this host, answered with a redirect back
/// (`303`), so reloading a page never repeats an action.
struct OpsRoutes: Sendable {
    let queue: JobQueue
    let auth: OpsAuth

    init(queue: JobQueue, credentials: OpsCredentials, throttle: LoginThrottle) {
        self.queue = queue
        self.auth = OpsAuth(credentials: credentials, queue: queue, throttle: throttle)
    }

    typealias Page = @Sendable (Request, APIContext, OpsIdentity) async throws -> Response
    typealias Action = @Sendable (Request, APIContext, OpsIdentity, OpsForm) async throws -> Response

    /// Form bodies are small: a page of ids at most.
    static let maxFormBytes = 256 * 1024

    func register(on router: Router<APIContext>) {
        let ops = router.group("/ops")
        ops.get("/assets/ops.css") { _, _ in Self.asset(OpsTemplates.stylesheet, type: "text/css; charset=utf-8") }
        ops.get("/assets/ops.js") { _, _ in Self.asset(OpsTemplates.script, type: "text/javascript; charset=utf-8") }
        ops.get("/login") { request, _ in
            Self.html(
                OpsTemplates.render(
                    "login", ["title": "Sign in", "next": Self.safeNext(request.uri.queryParameters["next"].map(String.init))]))
        }
        ops.post("/login") { request, context in try await signIn(request, context: context) }

        page(ops, "/") { _, _, identity in try await overview(identity) }
        page(ops, "/queues") { _, _, identity in try await queues(identity) }
        page(ops, "/live.json") { _, _, _ in try await live() }
        page(ops, "/cron") { _, _, identity in try await cron(identity) }
        page(ops, "/processes") { _, _, identity in try await processes(identity) }
        action(ops, "/processes/:id/quiet") { _, context, _, _ in try await signal(.quiet, context.parameters.get("id") ?? "") }
        action(ops, "/processes/:id/stop") { _, context, _, _ in try await signal(.stop, context.parameters.get("id") ?? "") }
        action(ops, "/queues/:name/pause") { _, context, _, _ in try await pause(true, context.parameters.get("name") ?? "") }
        action(ops, "/queues/:name/resume") { _, context, _, _ in try await pause(false, context.parameters.get("name") ?? "") }
        action(ops, "/jobs/:id/cancel") { _, context, _, _ in try await cancel(context.parameters.get("id") ?? "") }
        for set in JobSet.allCases {
            page(ops, "/\(set.rawValue)") { request, _, identity in try await jobs(set, request, identity) }
            action(ops, "/\(set.rawValue)/bulk") { _, _, _, form in try await bulk(set, form) }
        }
        page(ops, "/jobs/:id") { _, context, identity in try await job(context.parameters.get("id") ?? "", identity) }
        action(ops, "/jobs/:id/retry") { _, context, _, _ in try await retry(context.parameters.get("id") ?? "") }
        action(ops, "/jobs/:id/discard") { _, context, _, _ in try await discard(context.parameters.get("id") ?? "") }
        action(ops, "/logout") { request, _, identity, _ in
            if let nonce = identity.sessionNonce { try await auth.revoke(nonce) }
            return OpsAuth.redirect(to: "/ops/login", cookie: OpsSession.clearCookie(secure: OpsAuth.isHTTPS(request)))
        }
    }

    // MARK: Guards

    private func page(_ group: RouterGroup<APIContext>, _ path: String, _ handler: @escaping Page) {
        group.get(RouterPath(path)) { [auth] request, context in
            switch try await auth.authenticate(request, context: context) {
            case .refused(let response): return response
            case .signedIn(let identity): return try await handler(request, context, identity)
            }
        }
    }

    private func action(_ group: RouterGroup<APIContext>, _ path: String, _ handler: @escaping Action) {
        group.post(RouterPath(path)) { [auth] request, context in
            switch try await auth.authenticate(request, context: context) {
            case .refused(let response): return response
            case .signedIn(let identity):
                let form = OpsForm(try await request.body.collect(upTo: Self.maxFormBytes).readableBytesView)
                if let refusal = OpsAuth.postRefusal(request, form: form, identity: identity) {
                    return Self.message(status: .forbidden, title: "Refused", refusal, identity: identity)
                }
                return try await handler(request, context, identity, form)
            }
        }
    }

    private func signIn(_ request: Request, context: APIContext) async throws -> Response {
        let form = OpsForm(try await request.body.collect(upTo: Self.maxFormBytes).readableBytesView)
        let next = Self.safeNext(form["next"])
        if let refusal = OpsAuth.originRefusal(request) {
            return Self.html(OpsTemplates.render("login", ["title": "Sign in", "next": next, "problem": refusal]), status: .forbidden)
        }
        try await auth.throttle.admit(email: OpsAuth.throttleAccount, ip: context.remoteIP)
        guard auth.credentials.matches(user: form["user"] ?? "", password: form["password"] ?? "") else {
            try await auth.throttle.recordFailure(email: OpsAuth.throttleAccount)
            return Self.html(
                OpsTemplates.render("login", ["title": "Sign in", "next": next, "problem": "Wrong user or password."]),
                status: .unauthorized)
        }
        let session = OpsSession.issue(auth.credentials)
        return OpsAuth.redirect(to: next, cookie: OpsSession.setCookie(session.cookie, secure: OpsAuth.isHTTPS(request)))
    }

    /// Where to go after signing in: a dashboard path only (never another site).
    static func safeNext(_ next: String?) -> String {
        guard let next, next.hasPrefix("/ops/"), !next.contains("//"), !next.contains("\\") else { return "/ops/" }
        return next
    }

    // MARK: Pages

    private func layout(_ identity: OpsIdentity, title: String, page: String) -> [String: Any] {
        let sections = [
            ("/ops/", "Overview", "overview"), ("/ops/queues", "Queues", "queues"), ("/ops/processes", "Processes", "processes"),
            ("/ops/scheduled", "Scheduled", "scheduled"),
            ("/ops/retrying", "Retrying", "retrying"), ("/ops/dead", "Dead", "dead"), ("/ops/cron", "Cron", "cron"),
        ]
        return [
            "title": title, "page": page, "user": identity.user, "csrf": identity.csrfToken,
            "generatedAt": "Rendered " + OpsFormat.absolute(Date()),
            "nav": sections.map { ["href": $0.0, "label": $0.1, "active": $0.2 == page] as [String: Any] },
        ]
    }

    struct QueueRow {
        var name: String
        var queued, running, scheduled, retrying, dead: Int
        var succeededTotal, failedTotal: Int
        var latency: String
        var latencySeconds: Double
        var paused: Bool
        var canPause: Bool
        /// `held / limit` of the queue's limit across processes (`global_limit:`), `–` without one.
        var permits: String
    }

    private func queueRows() async throws -> [QueueRow] {
        async let stats = queue.stats()
        async let latencies = queue.latencies()
        async let pausedQueues = QueueControl(queue: queue).pausedQueues()
        let (counts, waits, paused) = try await (stats, latencies, pausedQueues)
        let limits = queue.catalog.globalLimits
        var rows: [QueueRow] = []
        for stat in counts {
            let latency = waits[stat.queue] ?? .zero
            let seconds = Double(latency.components.seconds) + Double(latency.components.attoseconds) / 1e18
            var permits = "–"
            if let limit = limits[stat.queue] { permits = "\(try await queue.permitsHeld(queue: stat.queue)) / \(limit)" }
            rows.append(
                QueueRow(
                    name: stat.queue, queued: stat.queued, running: stat.running, scheduled: stat.scheduled, retrying: stat.retrying,
                    dead: stat.dead, succeededTotal: stat.succeededTotal, failedTotal: stat.failedTotal,
                    latency: OpsFormat.span(seconds), latencySeconds: seconds, paused: paused.contains(stat.queue), canPause: true,
                    permits: permits))
        }
        return rows
    }

    private func overview(_ identity: OpsIdentity) async throws -> Response {
        let rows = try await queueRows()
        var context = layout(identity, title: "Overview", page: "overview")
        context["queues"] = rows
        var totals: [String: Int] = [:]
        for row in rows {
            totals["queued", default: 0] += row.queued
            totals["running", default: 0] += row.running
            totals["retrying", default: 0] += row.retrying
            totals["dead", default: 0] += row.dead
            totals["succeededTotal", default: 0] += row.succeededTotal
            totals["failedTotal", default: 0] += row.failedTotal
        }
        context["totals"] = totals
        if let chart = OpsChart.svg(try await JobHistory(queue: queue).history(minutes: 1440)) { context["chart"] = chart }
        context["chartNote"] = "No history yet: workers record it per minute."
        return Self.html(OpsTemplates.render("overview", context))
    }

    private func queues(_ identity: OpsIdentity) async throws -> Response {
        var context = layout(identity, title: "Queues", page: "queues")
        context["queues"] = try await queueRows()
        context["controls"] = true
        return Self.html(OpsTemplates.render("queues", context))
    }

    /// What the pages poll every 2 s: counts, totals (the page turns them into rates) and latency per queue.
    private func live() async throws -> Response {
        struct Live: Encodable {
            struct Queue: Encodable {
                var name: String
                var queued, running, scheduled, retrying, dead, succeededTotal, failedTotal: Int
                var latencySeconds: Double
                var paused: Bool
                var permits: String
            }
            var at: Int64
            var queues: [Queue]
        }
        let rows = try await queueRows()
        let body = Live(
            at: Int64(Date().timeIntervalSince1970 * 1000),
            queues: rows.map {
                .init(
                    name: $0.name, queued: $0.queued, running: $0.running, scheduled: $0.scheduled, retrying: $0.retrying,
                    dead: $0.dead, succeededTotal: $0.succeededTotal, failedTotal: $0.failedTotal, latencySeconds: $0.latencySeconds,
                    paused: $0.paused, permits: $0.permits)
            })
        var headers = HTTPFields()
        headers[.contentType] = "application/json; charset=utf-8"
        headers[.cacheControl] = "no-store"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: try JSONEncoder().encode(body))))
    }

    struct JobRow {
        var id, kind, queue: String
        var attempts, maxAttempts: Int
        var when: OpsFormat.Moment?
        var error: String?
    }

    static let pageSize = 25

    private func jobs(_ set: JobSet, _ request: Request, _ identity: OpsIdentity) async throws -> Response {
        let search = String(request.uri.queryParameters["q"] ?? "")
        let offset = max(0, Int(request.uri.queryParameters["offset"] ?? "") ?? 0)
        let page = try await queue.jobs(in: set, search: search, offset: offset, limit: Self.pageSize)
        let now = Date()
        let heading = ["scheduled": "Scheduled", "retrying": "Retrying", "dead": "Dead"][set.rawValue] ?? set.rawValue
        var context = layout(identity, title: heading, page: set.rawValue)
        context["heading"] = heading
        context["set"] = set.rawValue
        context["search"] = search
        context["hasSearch"] = !search.isEmpty
        context["total"] = page.total
        context["truncated"] = page.searchTruncated
        context["scanLimit"] = JobQueue.searchScanLimit
        context["hasJobs"] = !page.jobs.isEmpty
        context["canDiscard"] = set == .dead
        context["canCancel"] = set != .dead
        context["timeHeading"] = set == .dead ? "Died" : "Due"
        context["jobs"] = page.jobs.map { job in
            JobRow(
                id: job.id.rawValue, kind: job.kind, queue: job.queue, attempts: job.attempts, maxAttempts: job.maxAttempts,
                when: (set == .dead ? job.finishedAt : job.runAt).map { OpsFormat.moment($0, now: now) }, error: job.error)
        }
        context["from"] = page.offset + 1
        context["to"] = page.offset + page.jobs.count
        let query = search.isEmpty ? "" : "q=" + (search.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "") + "&"
        if page.offset > 0 { context["previous"] = "/ops/\(set.rawValue)?\(query)offset=\(max(0, page.offset - Self.pageSize))" }
        if page.offset + page.jobs.count < page.total {
            context["next"] = "/ops/\(set.rawValue)?\(query)offset=\(page.offset + Self.pageSize)"
        }
        if let done = request.uri.queryParameters["done"] { context["notice"] = Self.notice(String(done), request) }
        return Self.html(OpsTemplates.render("jobs", context))
    }

    /// A job by its record. Not by searching the streams: an entry stays there after its job finished until the head is
    /// trimmed, so a discarded job would show again as queued; a plain job waiting for its first start has no record
    /// yet and is counted in its queue, not shown.
    private func job(_ rawID: String, _ identity: OpsIdentity) async throws -> Response {
        guard let id = JobID(rawValue: rawID), let record = try await queue.record(id) else {
            return Self.message(
                status: .notFound, title: "No such job",
                "There is no job \(rawID) (finished jobs are kept only as long as their kind's retention).", identity: identity)
        }
        let now = Date()
        let status = record.inDeadSet ? "dead" : record.status.rawValue
        var context = layout(identity, title: "Job \(record.id.rawValue)", page: "job")
        context["job"] = record
        context["status"] = status
        if let owner = record.owner { context["owner"] = owner }
        context["payload"] = Redaction.display(record.payload) ?? "{}"
        if let result = Redaction.display(record.result) { context["result"] = result }
        let times: [(String, Date?)] = [
            ("Enqueued", record.enqueuedAt), ("Cron fire", record.scheduledFor), ("Due", record.runAt),
            ("Started", record.startedAt), ("Finished", record.finishedAt),
        ]
        context["times"] = times.compactMap { label, date in
            date.map { OpsFormat.moment($0, now: now) }.map { ["label": label, "absolute": $0.absolute, "relative": $0.relative] }
        }
        if let started = record.startedAt, let finished = record.finishedAt, finished >= started {
            context["duration"] = OpsFormat.duration(.milliseconds(Int64(finished.timeIntervalSince(started) * 1000)))
        }
        context["hasAttempts"] = !record.errors.isEmpty
        context["attempts"] = record.errors.reversed().map { attempt in
            ["attempt": attempt.attempt, "at": OpsFormat.moment(attempt.at, now: now), "error": attempt.error] as [String: Any]
        }
        context["canRetry"] = record.inDeadSet || record.status == .retrying || record.runAt != nil
        context["canDiscard"] = record.inDeadSet
        context["canCancel"] = !record.inDeadSet && [.queued, .running, .retrying].contains(record.status)
        return Self.html(OpsTemplates.render("job", context))
    }

    private func cron(_ identity: OpsIdentity) async throws -> Response {
        let now = Date()
        let schedules = try await queue.cronSchedules(now: now)
        var context = layout(identity, title: "Cron", page: "cron")
        context["hasSchedules"] = !schedules.isEmpty
        context["schedules"] = schedules.map { schedule in
            var row: [String: Any] = [
                "kind": schedule.kind, "name": schedule.name, "queue": schedule.queue, "expression": schedule.expression,
                "timeZone": schedule.timeZone,
            ]
            // Absent, not nil: a template section treats a present nil as a value.
            if let lastFire = schedule.lastFire { row["last"] = OpsFormat.moment(lastFire, now: now) }
            if let nextFire = schedule.nextFire { row["next"] = OpsFormat.moment(nextFire, now: now) }
            return row
        }
        return Self.html(OpsTemplates.render("cron", context))
    }

    // MARK: Actions

    private func bulk(_ set: JobSet, _ form: OpsForm) async throws -> Response {
        let ids = form.all("id").compactMap(JobID.init(rawValue:))
        let back = "/ops/\(set.rawValue)"
        guard !ids.isEmpty else { return OpsAuth.redirect(to: back + "?done=none") }
        var done = 0
        switch form["action"] {
        case "retry":
            for id in ids where (try? await queue.retryNow(id)) != nil { done += 1 }
            return OpsAuth.redirect(to: back + "?done=retried&n=\(done)")
        case "cancel" where set != .dead:
            for id in ids where (try? await queue.cancel(id)) != nil { done += 1 }
            return OpsAuth.redirect(to: back + "?done=cancelled&n=\(done)")
        case "discard" where set == .dead:
            for id in ids where (try? await queue.discardDead(id)) != nil { done += 1 }
            return OpsAuth.redirect(to: back + "?done=discarded&n=\(done)")
        default:
            return OpsAuth.redirect(to: back + "?done=unknown")
        }
    }

    private func retry(_ rawID: String) async throws -> Response {
        guard let id = JobID(rawValue: rawID) else { return OpsAuth.redirect(to: "/ops/jobs/\(rawID)") }
        do {
            let from = try await queue.retryNow(id)
            let set = ["retry": "retrying", "dead": "dead", "scheduled": "scheduled"][from] ?? "dead"
            return OpsAuth.redirect(to: "/ops/\(set)?done=retried&n=1")
        } catch let error as QueueError {
            throw APIError(error.code == .notFound ? .notFound : .conflict, "NOT_RETRYABLE", error.message)
        }
    }

    private func discard(_ rawID: String) async throws -> Response {
        guard let id = JobID(rawValue: rawID) else { throw APIError.notFound("job") }
        do {
            try await queue.discardDead(id)
        } catch let error as QueueError {
            throw APIError(.conflict, "NOT_DISCARDABLE", error.message)
        }
        return OpsAuth.redirect(to: "/ops/dead?done=discarded&n=1")
    }

    private func processes(_ identity: OpsIdentity) async throws -> Response {
        let now = Date()
        let processes = try await ProcessRegistry(queue: queue).processes()
        var context = layout(identity, title: "Processes", page: "processes")
        context["count"] = processes.count
        context["hasProcesses"] = !processes.isEmpty
        context["processes"] = processes.map { process in
            [
                "id": process.id, "kind": process.kind.rawValue, "host": process.host, "pid": process.pid, "version": process.version,
                "state": process.state.rawValue, "isWorker": process.kind == .worker, "canQuiet": process.state == .running,
                "queues": process.queues.map { served in served.limit.map { "\(served.name)=\($0)" } ?? served.name }.joined(
                    separator: ", "),
                "busy": process.busy, "concurrency": process.concurrency, "done": process.done, "failed": process.failed,
                "started": OpsFormat.moment(process.startedAt, now: now), "beat": OpsFormat.moment(process.lastBeatAt, now: now),
                "hasJobs": !process.jobs.isEmpty,
                "jobs": process.jobs.map { job in
                    ["id": job.id.rawValue, "kind": job.kind, "queue": job.queue, "started": OpsFormat.moment(job.startedAt, now: now)]
                        as [String: Any]
                },
            ] as [String: Any]
        }
        return Self.html(OpsTemplates.render("processes", context))
    }

    private func signal(_ signal: ProcessSignal, _ id: String) async throws -> Response {
        do {
            _ = try await ProcessRegistry(queue: queue).signal(signal, to: id)
        } catch let error as QueueError {
            throw APIError(.notFound, "NOT_FOUND", error.message)
        }
        return OpsAuth.redirect(to: "/ops/processes")
    }

    private func pause(_ pausing: Bool, _ name: String) async throws -> Response {
        let control = QueueControl(queue: queue)
        do {
            if pausing { try await control.pause(queue: name) } else { try await control.resume(queue: name) }
        } catch let error as QueueError {
            throw APIError(.notFound, "NOT_FOUND", error.message)
        }
        return OpsAuth.redirect(to: "/ops/queues")
    }

    private func cancel(_ rawID: String) async throws -> Response {
        guard let id = JobID(rawValue: rawID) else { throw APIError.notFound("job") }
        do {
            _ = try await queue.cancel(id)
        } catch let error as QueueError {
            throw APIError(error.code == .notFound ? .notFound : .conflict, "NOT_CANCELLABLE", error.message)
        }
        return OpsAuth.redirect(to: "/ops/jobs/\(id.rawValue)")
    }

    // MARK: Responses

    static func notice(_ done: String, _ request: Request) -> String? {
        let count = Int(request.uri.queryParameters["n"] ?? "") ?? 0
        let jobs = count == 1 ? "1 job" : "\(count) jobs"
        switch done {
        case "retried": return "Retried \(jobs): they run as soon as a worker is free."
        case "discarded": return "Discarded \(jobs)."
        case "cancelled": return "Cancelled \(jobs)."
        case "none": return "No job was selected."
        default: return nil
        }
    }

    static func html(_ text: String, status: HTTPResponse.Status = .ok) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "text/html; charset=utf-8"
        headers[.cacheControl] = "no-store"
        headers[HTTPField.Name("X-Frame-Options")!] = "DENY"
        headers[HTTPField.Name("Content-Security-Policy")!] =
            "default-src 'self'; style-src 'self'; script-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'"
        headers[HTTPField.Name("Referrer-Policy")!] = "same-origin"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    static func message(status: HTTPResponse.Status, title: String, _ message: String, identity: OpsIdentity?) -> Response {
        var context: [String: Any] = ["title": title, "message": message]
        if let identity {
            context["user"] = identity.user
            context["csrf"] = identity.csrfToken
        }
        return html(OpsTemplates.render("message", context), status: status)
    }

    static func asset(_ bytes: [UInt8], type: String) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = type
        headers[.cacheControl] = "max-age=300"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }
}
