import Foundation

/// A local APNs provider API (`apns_peer.py` beside this file, Hypercorn + `cryptography` from `.local/venv`): HTTP/2
/// over TLS only, with a certificate from a CA made for it alone (``caFile``), checking provider tokens against the
/// public half of a team key it made too (``keyPath``, a PKCS#8 `.p8` as Apple hands out), and answering as Apple
/// does, errors included. Answers per device token are set with ``answer(_:with:)``; every request is recorded.
// @unchecked: every stored property is a constant, and the process is only asked whether it runs and terminated.
public final class APNsPeer: @unchecked Sendable {
    /// One request as the peer saw it.
    public struct Request: Decodable, Sendable {
        public var token: String
        public var http: String
        public var status: Int
        public var reason: String?
        public var apnsId: String
        public var headers: [String: String]
        public var kid: String?
        public var iss: String?
        public var iat: Int?
        /// The payload's JSON text, for an accepted push.
        public var payload: String?

        enum CodingKeys: String, CodingKey { case token, http, status, reason, apnsId, headers, kid, iss, iat, payload }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            token = try container.decode(String.self, forKey: .token)
            http = try container.decode(String.self, forKey: .http)
            status = try container.decode(Int.self, forKey: .status)
            reason = try container.decodeIfPresent(String.self, forKey: .reason)
            apnsId = try container.decode(String.self, forKey: .apnsId)
            headers = try container.decode([String: String].self, forKey: .headers)
            kid = try container.decodeIfPresent(String.self, forKey: .kid)
            iss = try container.decodeIfPresent(String.self, forKey: .iss)
            iat = try container.decodeIfPresent(Int.self, forKey: .iat)
            payload = nil
        }
    }

    /// An answer the peer gives a device token in place of 200 (`{"status": 410, "reason": "Unregistered"}`).
    public struct Answer: Sendable {
        public var status: Int
        public var reason: String
        public var retryAfter: Int?

        public init(_ status: Int, _ reason: String, retryAfter: Int? = nil) {
            self.status = status
            self.reason = reason
            self.retryAfter = retryAfter
        }

        public static let unregistered = Answer(410, "Unregistered")
        public static let tooManyRequests = Answer(429, "TooManyRequests")
        public static let serviceUnavailable = Answer(503, "ServiceUnavailable")
    }

    public let port: Int
    public let keyID: String
    public let teamID: String
    public let topic: String
    private let directory: URL
    private let process: Process

    /// `https://localhost:PORT`: the name its certificate is issued for.
    public var url: String { "https://localhost:\(port)" }
    /// The CA that issued the peer's certificate (`APNS_CA_FILE`).
    public var caFile: String { directory.appendingPathComponent("ca.pem").path }
    /// The team's key, PKCS#8 PEM (`APNS_KEY_PATH`).
    public var keyPath: String { directory.appendingPathComponent("AuthKey.p8").path }

    private init(port: Int, keyID: String, teamID: String, topic: String, directory: URL, process: Process) {
        self.port = port
        self.keyID = keyID
        self.teamID = teamID
        self.topic = topic
        self.directory = directory
        self.process = process
    }

    deinit { stop() }

    public func stop() {
        if process.isRunning { process.terminate() }
        try? FileManager.default.removeItem(at: directory)
    }

    /// Makes the CA, the server's certificate and the team's key with `openssl`, starts the peer and waits until it
    /// listens.
    public static func start(keyID: String = "KEY1234567", teamID: String = "TEAM123456", topic: String = "com.carbscan.app")
        async throws -> APNsPeer
    {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("apns-peer-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
        try await PeerCertificates.make(in: directory)
        try await makeKey(at: path("AuthKey.p8"))
        try await PeerCertificates.openssl(["pkey", "-in", path("AuthKey.p8"), "-pubout", "-out", path("AuthKey.pub")])
        let (port, server) = try await PeerCertificates.startPeer(
            script: "apns_peer.py",
            arguments: [path("cert.pem"), path("key.pem"), path("AuthKey.pub"), keyID, teamID, topic, directory.path], directory: directory)
        return APNsPeer(port: port, keyID: keyID, teamID: teamID, topic: topic, directory: directory, process: server)
    }

    /// A new P-256 key as a PKCS#8 PEM file, like the `.p8` of an APNs key (another team's, for a test of a wrong key).
    public static func makeKey(at path: String) async throws {
        try await PeerCertificates.openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", path])
    }

    /// The answers a device token gets, one per push in order, before the peer goes back to 200.
    public func answer(_ token: String, with answers: [Answer]) throws {
        let file = directory.appendingPathComponent("answers.json")
        var all = (try? JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any]) ?? [:]
        all[token] = answers.map { answer -> [String: Any] in
            var entry: [String: Any] = ["status": answer.status, "reason": answer.reason]
            if let retryAfter = answer.retryAfter { entry["retryAfter"] = retryAfter }
            return entry
        }
        let data = try JSONSerialization.data(withJSONObject: all)
        let temporary = directory.appendingPathComponent("answers.json.tmp")
        try data.write(to: temporary)
        // Renamed into place: the peer reads the file at every push, never half of it.
        guard rename(temporary.path, file.path) == 0 else { throw ServerError("cannot write \(file.path)") }
    }

    /// Every request so far, oldest first.
    public func requests() throws -> [Request] {
        guard let text = try? String(contentsOf: directory.appendingPathComponent("requests.jsonl"), encoding: .utf8) else { return [] }
        return try text.split(separator: "\n").map { line in
            var request = try JSONDecoder().decode(Request.self, from: Data(line.utf8))
            if let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], let payload = object["payload"] {
                request.payload = String(
                    decoding: try JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys]), as: UTF8.self)
            }
            return request
        }
    }

    /// The pushes it accepted (200), oldest first.
    public func pushes() throws -> [Request] { try requests().filter { $0.status == 200 } }
}
