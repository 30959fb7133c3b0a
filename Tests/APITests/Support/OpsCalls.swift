import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Queue
import TestSupport
import Testing

/// The dashboard's settings in tests, and calls to `/ops/…` as a browser or `curl -u` makes them.
enum Ops {
    static let user = "operator"
    static let password = "correct horse battery"
    static let environment = ["OPS_USER": user, "OPS_PASSWORD": password]
    static let basic = "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()

    struct Answer {
        var status: Int
        var headers: HTTPFields
        var text: String
        var location: String? { headers[.location] }

        /// The CSRF token the page's forms carry.
        var csrf: String? {
            guard let range = text.range(of: #"name="csrf" value=""#) else { return nil }
            return String(text[range.upperBound...].prefix { $0 != "\"" })
        }
    }
}

extension TestClientProtocol {
    func ops(
        _ method: HTTPRequest.Method, _ path: String, authorization: String? = Ops.basic, cookie: String? = nil,
        form: [(String, String)]? = nil, headers: HTTPFields = [:]
    ) async throws -> Ops.Answer {
        var fields = headers
        if let authorization { fields[.authorization] = authorization }
        if let cookie { fields[.cookie] = cookie }
        var body: ByteBuffer?
        if let form {
            let encoded = form.map { name, value in
                let allowed = CharacterSet.alphanumerics
                return (name.addingPercentEncoding(withAllowedCharacters: allowed) ?? "") + "="
                    + (value.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")
            }
            body = ByteBuffer(string: encoded.joined(separator: "&"))
            fields[.contentType] = "application/x-www-form-urlencoded"
        }
        let response = try await executeRequest(uri: path, method: method, headers: fields, body: body)
        return Ops.Answer(status: Int(response.status.code), headers: response.headers, text: String(buffer: response.body))
    }
}

extension TestAPI {
    /// Enqueues `count` noop jobs that fail for good and runs a worker until they are all dead.
    func deadJobs(_ count: Int) async throws -> [JobID] {
        var ids: [JobID] = []
        for _ in 0..<count {
            ids.append(try #require(try await queue.enqueue("noop", payload: ["fail": "permanent"]).id))
        }
        let (worker, task) = startWorker(queue: "default")
        let died = try await eventually { try await queue.stats().first { $0.queue == "default" }?.dead == count }
        worker.stop()
        try await task.value
        guard died else { throw TestSetupError("the noop jobs never died") }
        return ids
    }

    func isDead(_ id: JobID) async throws -> Bool {
        !(try await queue.redis.send(["ZSCORE", queue.keys("default").dead, id.rawValue]).isNull)
    }
}
