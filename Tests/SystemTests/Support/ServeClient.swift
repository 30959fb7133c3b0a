import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The mobile API of a `carbscan serve` a test started on `port`, called as an app would over URLSession: each call
/// answers the status and the envelope's `data`. `preferAsync` sends `Prefer: respond-async` with every body.
struct ServeClient: Sendable {
    let base: String
    let preferAsync: Bool

    init(port: Int, preferAsync: Bool = false) {
        base = "http://127.0.0.1:\(port)/api/mobile/v1/"
        self.preferAsync = preferAsync
    }

    func call(
        _ method: String, _ path: String, token: String? = nil, json: String? = nil, headers: [String: String] = [:]
    ) async throws -> (Int, [String: Any]) {
        var request = URLRequest(url: URL(string: base + path)!)
        request.httpMethod = method
        request.timeoutInterval = 30
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        if let json {
            request.httpBody = Data(json.utf8)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            if preferAsync { request.setValue("respond-async", forHTTPHeaderField: "Prefer") }
        }
        let (data, response) = try await URLSession.shared.data(for: request)
        let body = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, body["data"] as? [String: Any] ?? [:])
    }
}
