import JSON
import Logging
import OutboundHTTP

/// What the configured OpenAI-compatible server says about its models, read once when a worker starts, so an
/// operator sees in the log whether `AI_MODEL` is served and whether it can take images before the first analysis
/// dies of it. `GET /v1/models` is common to OpenAI, llama.cpp, Ollama and vLLM; `GET /props` is llama.cpp's and
/// tells whether the model has vision.
package struct AIModelProbe: Sendable {
    package struct Report: Sendable, Equatable {
        /// The model ids the server lists.
        package var models: [String]
        /// Whether the loaded model takes images; nil when the server does not say (OpenAI does not).
        package var vision: Bool?
    }

    let services: WorkerServices

    package init(services: WorkerServices) {
        self.services = services
    }

    /// Nil when no model is configured or the server lists nothing readable.
    package func run() async -> Report? {
        guard let base = services.settings.aiBaseURL else { return nil }
        var headers: [(name: String, value: String)] = [("Accept", "application/json")]
        if let key = services.settings.aiAPIKey { headers.append(("Authorization", "Bearer \(key)")) }
        guard let models = await json(base + "/v1/models", headers: headers)?["data"], case .array(let list) = models else {
            return nil
        }
        let ids = list.compactMap { model -> String? in if case .string(let id)? = model["id"] { id } else { nil } }
        var vision: Bool?
        if case .bool(let flag)? = await json(base + "/props", headers: headers)?["modalities"]?["vision"] { vision = flag }
        return Report(models: ids, vision: vision)
    }

    /// Logs the report: what the server has, and a warning for what will fail (no vision while analyses are served).
    package func log(_ report: Report, servesAnalyses: Bool, logger: Logger) {
        var metadata: Logger.Metadata = ["models": "\(report.models.joined(separator: ","))", "model": "\(services.settings.aiModel)"]
        if let vision = report.vision { metadata["vision"] = "\(vision)" }
        logger.info("AI model server", metadata: metadata)
        if report.vision == false && servesAnalyses {
            logger.warning(
                "the AI model cannot take images: analyses will die with that reason (set AI_MODEL to a vision model)",
                metadata: ["model": "\(services.settings.aiModel)"])
        }
    }

    private func json(_ url: String, headers: [(name: String, value: String)]) async -> JSONValue? {
        guard
            let response = try? await services.http.send(
                HTTPRequest(method: .get, url: url, headers: headers, provider: "ai"), totalTimeout: .seconds(5)),
            response.status == 200
        else { return nil }
        return try? JSONValue(parsing: String(decoding: response.body, as: UTF8.self))
    }
}
