import Foundation

/// A local FCM HTTP v1 API with Google's OAuth 2.0 token endpoint (`fcm_peer.py` beside this file): TLS with a CA of
/// its own (``caFile``), service-account assertions checked against the public half of an RSA key it made
/// (``serviceAccountFile`` holds the private half, as Google's files do, with `token_uri` pointing at the peer),
/// Google's errors. Answers per device token are set with ``answer(_:with:)``; every request is recorded.
// @unchecked: every stored property is a constant, and the process is only asked whether it runs and terminated.
public final class FCMPeer: @unchecked Sendable {
    /// One request as the peer saw it.
    public struct Request: Decodable, Sendable {
        public var path: String
        public var status: Int
        /// A send's device token.
        public var device: String?
    }

    /// An error the peer answers a device token with in place of 200.
    public struct Answer: Sendable {
        public var status: Int
        public var errorCode: String?
        public var retryAfter: Int?

        public init(_ status: Int, _ errorCode: String?, retryAfter: Int? = nil) {
            self.status = status
            self.errorCode = errorCode
            self.retryAfter = retryAfter
        }

        public static let unregistered = Answer(404, "UNREGISTERED")
        public static let quotaExceeded = Answer(429, "QUOTA_EXCEEDED")
    }

    public let port: Int
    public let project: String
    public let clientEmail: String
    private let directory: URL
    private let process: Process

    /// `https://localhost:PORT` (`FCM_URL`).
    public var url: String { "https://localhost:\(port)" }
    public var caFile: String { directory.appendingPathComponent("ca.pem").path }
    /// The project's service account, as Google hands it out (`FCM_SERVICE_ACCOUNT_FILE`).
    public var serviceAccountFile: String { directory.appendingPathComponent("service-account.json").path }

    private init(port: Int, project: String, clientEmail: String, directory: URL, process: Process) {
        self.port = port
        self.project = project
        self.clientEmail = clientEmail
        self.directory = directory
        self.process = process
    }

    deinit { stop() }

    public func stop() {
        if process.isRunning { process.terminate() }
        try? FileManager.default.removeItem(at: directory)
    }

    public static func start(project: String = "carbscan-test") async throws -> FCMPeer {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fcm-peer-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
        try await PeerCertificates.make(in: directory)
        try await makeKey(at: path("account.pem"))
        try await PeerCertificates.openssl(["pkey", "-in", path("account.pem"), "-pubout", "-out", path("account.pub")])
        let clientEmail = "carbscan-push@\(project).iam.gserviceaccount.com"
        let (port, server) = try await PeerCertificates.startPeer(
            script: "fcm_peer.py",
            arguments: [path("cert.pem"), path("key.pem"), path("account.pub"), clientEmail, project, directory.path], directory: directory)
        let peer = FCMPeer(port: port, project: project, clientEmail: clientEmail, directory: directory, process: server)
        try peer.writeServiceAccount(keyPath: path("account.pem"), to: peer.serviceAccountFile)
        return peer
    }

    /// A new RSA key of 2048 bits, PKCS#8 PEM (another account's, for a test of a wrong key).
    public static func makeKey(at path: String) async throws {
        try await PeerCertificates.openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", path])
    }

    /// A service account file of this project with the key at `keyPath`, its `token_uri` the peer's.
    public func writeServiceAccount(keyPath: String, to file: String) throws {
        let account: [String: Any] = [
            "type": "service_account", "project_id": project, "private_key_id": "0123456789abcdef",
            "private_key": try String(contentsOfFile: keyPath, encoding: .utf8), "client_email": clientEmail,
            "client_id": "100000000000000000000", "token_uri": "\(url)/token",
            "auth_uri": "https://accounts.google.com/o/oauth2/auth",
        ]
        try JSONSerialization.data(withJSONObject: account).write(to: URL(fileURLWithPath: file))
    }

    /// The answers a device token gets, one per send in order, before the peer goes back to 200.
    public func answer(_ token: String, with answers: [Answer]) throws {
        let file = directory.appendingPathComponent("answers.json")
        var all = (try? JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any]) ?? [:]
        all[token] = answers.map { answer -> [String: Any] in
            var entry: [String: Any] = ["status": answer.status]
            if let code = answer.errorCode { entry["errorCode"] = code }
            if let retryAfter = answer.retryAfter { entry["retryAfter"] = retryAfter }
            return entry
        }
        let temporary = directory.appendingPathComponent("answers.json.tmp")
        try JSONSerialization.data(withJSONObject: all).write(to: temporary)
        guard rename(temporary.path, file.path) == 0 else { throw ServerError("cannot write \(file.path)") }
    }

    /// Every request so far, oldest first.
    public func requests() throws -> [Request] {
        guard let text = try? String(contentsOf: directory.appendingPathComponent("requests.jsonl"), encoding: .utf8) else { return [] }
        return try text.split(separator: "\n").map { try JSONDecoder().decode(Request.self, from: Data($0.utf8)) }
    }

    /// The messages it accepted (200 sends), oldest first, as JSON text.
    public func messages() throws -> [String] {
        guard let text = try? String(contentsOf: directory.appendingPathComponent("requests.jsonl"), encoding: .utf8) else { return [] }
        return try text.split(separator: "\n").compactMap { line in
            guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                object["status"] as? Int == 200, object["path"] as? String != "/token", let message = object["message"]
            else { return nil }
            return String(decoding: try JSONSerialization.data(withJSONObject: message, options: [.sortedKeys]), as: UTF8.self)
        }
    }
}
