import Foundation
import JSON
import Yams

extension JobKindSpec {
    static let topLevelKeys = [
        "queue", "queue_limit", "global_limit", "shards", "priority", "timeout", "visibility_timeout", "attempts", "backoff", "unique",
        "retention",
        "schedules", "rate_limit", "payload",
        "result", "events", "start_by", "fair",
    ]

    /// Parses one job-kind file's text.
    /// - Parameters:
    ///   - name: the kind's name (the file name without its extension).
    ///   - file: the path reported in errors and kept in `file`.
    /// - Throws: the first problem found, with the line and column of the node at fault.
    public init(yaml text: String, name: String, file: String) throws(ConfigError) {
        let reader = YAMLReader(file: file)
        guard Self.isValidName(name) else {
            throw ConfigError(
                file: file,
                reason: "'\(name)' is not a valid job kind name: use lowercase letters, digits and '-', "
                    + "starting with a letter or digit")
        }
        guard let root = try reader.compose(text) else {
            throw ConfigError(
                file: file, reason: "the file is empty; expected a mapping with at least 'payload:' (or '{}')")
        }
        let entries = try reader.mapping(root, "", allowed: Self.topLevelKeys)
        self.init(name: name, file: file)

        if let entry = entries["payload"] {
            payloadSchema = try Self.schema(entry.value, "payload", reader)
            guard payloadSchema.requiresObject else {
                throw reader.error(entry.value, "payload", "the payload schema must say 'type: object' (payloads are JSON objects)")
            }
        }
        if let entry = entries["result"] {
            resultSchema = try Self.schema(entry.value, "result", reader)
        }
        if let entry = entries["queue"] {
            queue = try reader.string(entry.value, "queue", expected: "a queue name")
            guard Self.isValidQueueName(queue) else {
                throw reader.error(entry.value, "queue", "'\(queue)' is not a valid queue name; use [a-z0-9_-]+")
            }
        }
        if let entry = entries["queue_limit"] {
            let limit = try reader.int(entry.value, "queue_limit", expected: "an integer from 1 to \(Self.maximumQueueLimit)")
            guard (1...Self.maximumQueueLimit).contains(limit) else {
                throw reader.error(entry.value, "queue_limit", "must be from 1 to \(Self.maximumQueueLimit), got \(limit)")
            }
            queueLimit = limit
        }
        if let entry = entries["global_limit"] {
            let limit = try reader.int(entry.value, "global_limit", expected: "an integer from 1 to \(Self.maximumQueueLimit)")
            guard (1...Self.maximumQueueLimit).contains(limit) else {
                throw reader.error(entry.value, "global_limit", "must be from 1 to \(Self.maximumQueueLimit), got \(limit)")
            }
            globalLimit = limit
        }
        if let entry = entries["shards"] {
            let count = try reader.int(entry.value, "shards", expected: "an integer from 1 to \(Self.maximumShards)")
            guard (1...Self.maximumShards).contains(count) else {
                throw reader.error(entry.value, "shards", "must be from 1 to \(Self.maximumShards), got \(count)")
            }
            shards = count
        }
        if let entry = entries["priority"] {
            priority = try reader.int(entry.value, "priority", expected: "an integer from 1 to 100")
            guard (1...100).contains(priority) else {
                throw reader.error(entry.value, "priority", "must be from 1 to 100, got \(priority)")
            }
        }
        if let entry = entries["timeout"] {
            timeout = try reader.duration(entry.value, "timeout")
        }
        if let entry = entries["visibility_timeout"] {
            visibilityTimeout = try reader.duration(
                entry.value, "visibility_timeout", minimum: Self.minimumVisibilityTimeout)
        }
        if let entry = entries["attempts"] {
            maxAttempts = try reader.int(entry.value, "attempts", expected: "an integer of at least 1")
            guard maxAttempts >= 1 else {
                throw reader.error(entry.value, "attempts", "must be at least 1, got \(maxAttempts)")
            }
        }
        if let entry = entries["backoff"] {
            backoff = try Self.backoff(entry.value, reader)
        }
        if let entry = entries["unique"] {
            uniqueness = try Self.uniqueness(entry.value, schema: payloadSchema, reader)
        }
        if let entry = entries["retention"] {
            let fields = try reader.mapping(entry.value, "retention", allowed: ["succeeded", "failed"])
            if let succeeded = fields["succeeded"] {
                // 0s: a succeeded job's record is deleted at once (only the totals count it).
                retention.succeeded = try reader.duration(succeeded.value, "retention.succeeded", minimum: .zero)
            }
            if let failed = fields["failed"] {
                retention.failed = try reader.duration(failed.value, "retention.failed")
            }
        }
        if let entry = entries["schedules"] {
            schedules = try Self.schedules(entry.value, schema: payloadSchema, reader)
        }
        if let entry = entries["rate_limit"] {
            rateLimit = try Self.rateLimit(entry.value, reader)
        }
        if let entry = entries["events"] {
            events = try reader.bool(entry.value, "events")
        }
        if let entry = entries["start_by"] {
            startBy = try reader.duration(entry.value, "start_by", minimum: .seconds(1))
        }
        if let entry = entries["fair"] {
            fairness = try Self.fairness(entry.value, schema: payloadSchema, rateLimit: rateLimit, reader)
        }
    }

    private static func fairness(_ node: Node, schema: JSONSchema, rateLimit: RateLimit?, _ reader: YAMLReader) throws(ConfigError)
        -> Fairness
    {
        let entries = try reader.mapping(node, "fair", allowed: ["by", "window", "weight_by", "weights"])
        guard let byEntry = entries["by"] else { throw reader.error(node, "fair", "missing 'by' (the payload member naming a job's lane)") }
        let by = try reader.string(byEntry.value, "fair.by", expected: "a payload member such as 'userId'")
        guard schema.allowsProperty(by) else {
            throw reader.error(byEntry.value, "fair.by", "'\(by)' is not a property of the payload schema")
        }
        var window = Fairness.defaultWindow(for: rateLimit)
        if let windowEntry = entries["window"] {
            window = try reader.int(windowEntry.value, "fair.window", expected: "an integer from 1 to \(Fairness.maximumWindow)")
            guard (1...Fairness.maximumWindow).contains(window) else {
                throw reader.error(windowEntry.value, "fair.window", "must be from 1 to \(Fairness.maximumWindow), got \(window)")
            }
        }
        let (weightBy, weights) = try Self.weights(
            entries["weight_by"]?.value, entries["weights"]?.value, node: node, schema: schema, reader)
        return Fairness(by: by, window: window, weightBy: weightBy, weights: weights)
    }

    /// `weight_by` (a payload member) and `weights` (its values' weights, 1 to ``Fairness/maximumWeight``), together or
    /// not at all.
    private static func weights(
        _ byNode: Node?, _ weightsNode: Node?, node: Node, schema: JSONSchema, _ reader: YAMLReader
    ) throws(ConfigError) -> (String?, [String: Int]) {
        guard let byNode else {
            if weightsNode != nil {
                throw reader.error(node, "fair", "'weights' needs 'weight_by' (the payload member naming a job's class)")
            }
            return (nil, [:])
        }
        let weightBy = try reader.string(byNode, "fair.weight_by", expected: "a payload member such as 'tier'")
        guard schema.allowsProperty(weightBy) else {
            throw reader.error(byNode, "fair.weight_by", "'\(weightBy)' is not a property of the payload schema")
        }
        guard let weightsNode else { throw reader.error(node, "fair", "'weight_by' needs 'weights' (e.g. { pro: 3 })") }
        guard case .mapping(let mapping) = weightsNode, !mapping.isEmpty else {
            throw reader.error(weightsNode, "fair.weights", "expected a mapping of classes to weights, got \(reader.describe(weightsNode))")
        }
        var weights: [String: Int] = [:]
        for (keyNode, value) in mapping {
            guard case .scalar(let name) = keyNode else { throw reader.error(keyNode, "fair.weights", "keys must be plain names") }
            let path = "fair.weights.\(name.string)"
            let weight = try reader.int(value, path, expected: "an integer from 1 to \(Fairness.maximumWeight)")
            guard (1...Fairness.maximumWeight).contains(weight) else {
                throw reader.error(value, path, "must be from 1 to \(Fairness.maximumWeight), got \(weight)")
            }
            weights[name.string] = weight
        }
        return (weightBy, weights)
    }

    private static func rateLimit(_ node: Node, _ reader: YAMLReader) throws(ConfigError) -> RateLimit {
        let entries = try reader.mapping(node, "rate_limit", allowed: ["name", "per_second", "burst"])
        guard let nameEntry = entries["name"] else { throw reader.error(node, "rate_limit", "missing 'name'") }
        guard let rateEntry = entries["per_second"] else { throw reader.error(node, "rate_limit", "missing 'per_second'") }
        let name = try reader.string(nameEntry.value, "rate_limit.name", expected: "a bucket name")
        guard isValidQueueName(name) else {
            throw reader.error(nameEntry.value, "rate_limit.name", "'\(name)' is not a valid bucket name; use [a-z0-9_-]+")
        }
        let perSecond = try reader.number(rateEntry.value, "rate_limit.per_second", expected: "a positive number")
        // Below one token in a thousand seconds the bucket would be a switch-off, better said by not running the kind.
        guard perSecond >= 0.001, perSecond <= 1_000_000 else {
            throw reader.error(rateEntry.value, "rate_limit.per_second", "must be from 0.001 to 1000000, got \(perSecond)")
        }
        // The default burst lets one second's worth of calls go at once (at least one, or nothing could ever pass).
        var burst = max(1, Int(perSecond.rounded(.up)))
        if let burstEntry = entries["burst"] {
            burst = try reader.int(burstEntry.value, "rate_limit.burst", expected: "an integer of at least 1")
            guard (1...1_000_000).contains(burst) else {
                throw reader.error(burstEntry.value, "rate_limit.burst", "must be from 1 to 1000000, got \(burst)")
            }
        }
        return RateLimit(name: name, perSecond: perSecond, burst: burst)
    }

    private static func schema(_ node: Node, _ key: String, _ reader: YAMLReader) throws(ConfigError) -> JSONSchema {
        var marks = YAMLReader.Marks()
        let value = try reader.json(node, key, marks: &marks)
        let schema: JSONSchema
        do {
            schema = try JSONSchema(value)
        } catch {
            let mark = marks.mark(for: error.path, key: error.isAboutTheKeyword)
            throw ConfigError(
                file: reader.file, line: mark?.line, column: mark?.column, reason: "\(key)\(error.path): \(error.reason)")
        }
        return schema
    }

    private static func backoff(_ node: Node, _ reader: YAMLReader) throws(ConfigError) -> Backoff {
        let allKeys = ["type", "base", "max", "jitter", "delay"]
        let entries = try reader.mapping(node, "backoff", allowed: allKeys)
        guard let typeEntry = entries["type"] else {
            throw reader.error(node, "backoff", "missing 'type' (exponential or fixed)")
        }
        let type = try reader.string(typeEntry.value, "backoff.type", expected: "exponential or fixed")
        let allowed: [String]
        switch type {
        case "exponential": allowed = ["type", "base", "max", "jitter"]
        case "fixed": allowed = ["type", "delay", "jitter"]
        default: throw reader.error(typeEntry.value, "backoff.type", "expected exponential or fixed, got '\(type)'")
        }
        for key in allKeys where !allowed.contains(key) {
            if let entry = entries[key] {
                throw reader.error(
                    entry.keyNode, "backoff", "'\(key)' does not apply to a \(type) backoff (allowed: \(allowed.joined(separator: ", ")))")
            }
        }
        var jitter = type == "fixed" ? 0 : 0.2
        if let entry = entries["jitter"] {
            jitter = try reader.number(entry.value, "backoff.jitter", expected: "a fraction from 0 to 1")
            guard (0...1).contains(jitter) else {
                throw reader.error(entry.value, "backoff.jitter", "must be from 0 to 1, got \(jitter)")
            }
        }
        if type == "fixed" {
            guard let delay = entries["delay"] else { throw reader.error(node, "backoff", "missing 'delay'") }
            return .fixed(try reader.duration(delay.value, "backoff.delay"), jitter: jitter)
        }
        let base =
            try entries["base"].map { entry throws(ConfigError) in try reader.duration(entry.value, "backoff.base") }
            ?? .seconds(1)
        let max =
            try entries["max"].map { entry throws(ConfigError) in try reader.duration(entry.value, "backoff.max") }
            ?? .seconds(600)
        if max < base {
            throw reader.error(entries["max"]?.value ?? node, "backoff.max", "is below backoff.base")
        }
        return .exponential(base: base, max: max, jitter: jitter)
    }

    private static func uniqueness(_ node: Node, schema: JSONSchema, _ reader: YAMLReader) throws(ConfigError)
        -> Uniqueness
    {
        let entries = try reader.mapping(node, "unique", allowed: ["key", "ttl"])
        guard let keyEntry = entries["key"] else { throw reader.error(node, "unique", "missing 'key'") }
        guard let ttlEntry = entries["ttl"] else { throw reader.error(node, "unique", "missing 'ttl'") }
        let template = try reader.string(keyEntry.value, "unique.key", expected: "a key template such as 'push:${token}'")
        let parts: [Uniqueness.Part]
        do {
            parts = try Uniqueness.parse(template)
        } catch {
            throw reader.error(keyEntry.value, "unique.key", error.reason)
        }
        for case .field(let field) in parts where !schema.allowsProperty(field) {
            throw reader.error(
                keyEntry.value, "unique.key", "'${\(field)}' is not a property of the payload schema")
        }
        return Uniqueness(keyTemplate: template, ttl: try reader.duration(ttlEntry.value, "unique.ttl"))
    }

    private static func schedules(_ node: Node, schema: JSONSchema, _ reader: YAMLReader) throws(ConfigError)
        -> [CronSchedule]
    {
        guard case .sequence(let sequence) = node else {
            throw reader.error(node, "schedules", "expected a list of schedules, got \(reader.describe(node))")
        }
        var schedules: [CronSchedule] = []
        for (index, item) in sequence.enumerated() {
            let path = "schedules[\(index)]"
            let entries = try reader.mapping(item, path, allowed: ["name", "cron", "timezone", "payload"])
            guard let nameEntry = entries["name"] else { throw reader.error(item, path, "missing 'name'") }
            guard let cronEntry = entries["cron"] else { throw reader.error(item, path, "missing 'cron'") }
            let name = try reader.string(nameEntry.value, path + ".name", expected: "a schedule name")
            guard isValidQueueName(name) else {
                throw reader.error(nameEntry.value, path + ".name", "'\(name)' is not a valid schedule name; use [a-z0-9_-]+")
            }
            guard !schedules.contains(where: { $0.name == name }) else {
                throw reader.error(nameEntry.value, path + ".name", "duplicate schedule name '\(name)'")
            }
            let cronText = try reader.string(cronEntry.value, path + ".cron", expected: "a cron expression")
            let expression: CronExpression
            do {
                expression = try CronExpression(parsing: cronText)
            } catch {
                throw reader.error(cronEntry.value, path + ".cron", "invalid cron expression: \(error)")
            }
            var timeZone = CronSchedule.utc
            if let zoneEntry = entries["timezone"] {
                let identifier = try reader.string(zoneEntry.value, path + ".timezone", expected: "an IANA time zone")
                guard let zone = TimeZone(identifier: identifier) else {
                    throw reader.error(
                        zoneEntry.value, path + ".timezone",
                        "unknown time zone '\(identifier)'; use an IANA name such as UTC or Europe/Berlin")
                }
                timeZone = zone
            }
            var payload: JSONValue = .object([:])
            if let payloadEntry = entries["payload"] {
                var marks = YAMLReader.Marks()
                payload = try reader.json(payloadEntry.value, path + ".payload", marks: &marks)
                let violations = schema.validate(payload)
                if let first = violations.first {
                    let mark = marks.mark(for: first.path)
                    throw ConfigError(
                        file: reader.file, line: mark?.line, column: mark?.column,
                        reason: "\(path).payload does not satisfy the payload schema: "
                            + violations.map { "\($0.path.isEmpty ? "" : "\($0.path) ")\($0.message)" }
                            .joined(separator: "; "))
                }
            } else if let first = schema.validate(payload).first {
                throw reader.error(
                    item, path, "the schedule needs a 'payload' (the empty payload fails the schema: \(first))")
            }
            schedules.append(CronSchedule(name: name, expression: expression, timeZone: timeZone, payload: payload))
        }
        return schedules
    }
}
