import Foundation
import JSON
import JobContracts
import Postgres
import Queue
import Store

/// `analysis` (jobs/analysis.yml): sends the stored photo to the AI model (vision) and writes the carb estimate as
/// a meal — once per job id. The scan reserved when the photo was accepted is the job's reservation: the queue
/// charges it when the job succeeds and gives it back when the job dies or is cancelled (``QuotaLedger``).
package struct AnalysisJob: JobKind {
    package typealias Contract = AnalysisContract

    /// The answer the model must give (its JSON schema is `schema`).
    struct Estimate: Decodable {
        var compositeItemName: String
        var carbEstimate: Double
        var confidenceLow: Double
        var confidenceHigh: Double
        var confidenceLevel: Double
        var analysis: String
    }

    /// Bounds and descriptions where providers honour them (OpenAI's strict mode takes `minimum`/`maximum`): a
    /// small model put 0–1 values in the gram range without them. `validate` still checks every answer.
    static let schema: JSONValue = [
        "type": "object", "additionalProperties": false,
        "required": ["compositeItemName", "carbEstimate", "confidenceLow", "confidenceHigh", "confidenceLevel", "analysis"],
        "properties": [
            "compositeItemName": ["type": "string", "description": "What the meal is, in a few words."],
            "carbEstimate": [
                "type": "number", "minimum": 0, "maximum": 1000, "description": "Carbohydrates in the whole meal, in grams.",
            ],
            "confidenceLow": [
                "type": "number", "minimum": 0, "maximum": 1000,
                "description": "Lower end of the likely range, in grams (not a probability); at most carbEstimate.",
            ],
            "confidenceHigh": [
                "type": "number", "minimum": 0, "maximum": 1000,
                "description": "Upper end of the likely range, in grams (not a probability); at least carbEstimate.",
            ],
            "confidenceLevel": [
                "type": "number", "minimum": 0, "maximum": 1, "description": "How sure the estimate is, from 0 to 1.",
            ],
            "analysis": ["type": "string", "description": "A short explanation, item by item, of at most a few sentences."],
        ],
    ]

    static let instructions = """
        You estimate the carbohydrates in the food photo, in grams. Answer with the JSON object asked for: \
        compositeItemName (what the meal is), carbEstimate (grams), confidenceLow and confidenceHigh (a range around \
        the estimate), confidenceLevel (0 to 1) and analysis (a short explanation per item).
        """

    let services: WorkerServices
    let ai: AIClient
    /// The meals of the analyses that end together, written in one statement and one commit.
    let meals: GroupCommit<NewAnalyzedMeal, Int64>

    package init(services: WorkerServices) {
        self.services = services
        self.ai = AIClient(services: services)
        self.meals = Meals.batchedWriter(services.database)
    }

    /// The async steps only, like ``ChatJob``'s: this frame is kept while the model thinks.
    package func run(_ parameters: Parameters, context: JobContext) async throws -> Contract.Result? {
        let request = try await request(parameters, ai)
        await context.events.progress("image_received")
        await context.events.progress("model_asked")
        let meal = try Self.validate(await ai.complete(Estimate.self, request))
        await context.events.progress("answer_parsed")
        let mealID = try await meals.submit(
            NewAnalyzedMeal(userID: parameters.userId, jobID: context.id.rawValue, photoID: parameters.photoId, meal: meal))
        return Self.result(mealID, meal)
    }

    /// The request with the stored photo. The data URL lives only here: while the model thinks, the request's body is
    /// its one copy.
    private func request(_ parameters: Parameters, _ ai: AIClient) async throws -> AIClient.Request {
        guard let dataURL = try await MealPhotos(services.database).dataURL(id: parameters.photoId, userID: parameters.userId) else {
            throw JobFailure.permanent("photo \(parameters.photoId) of user \(parameters.userId) does not exist (deleted?)")
        }
        return try Self.request(dataURL, ai)
    }

    @inline(never)
    static func request(_ dataURL: String, _ ai: AIClient) throws -> AIClient.Request {
        try ai.request(
            kind: name,
            messages: [
                .init(role: "system", text: instructions),
                .init(role: "user", text: "How many carbs are in this meal?", imageDataURL: dataURL),
            ],
            schemaName: "carb_estimate", schema: schema)
    }

    @inline(never)
    static func result(_ mealID: Int64, _ meal: AnalyzedMeal) -> Contract.Result {
        .init(
            mealId: mealID,
            analysis: .init(
                carbEstimate: meal.carbEstimate, confidenceLow: meal.confidenceLow, confidenceHigh: meal.confidenceHigh,
                confidenceLevel: meal.confidenceLevel, analysis: meal.analysis, compositeItemName: meal.name))
    }

    /// An estimate the app can show: carbs 0–1000 g, low ≤ estimate ≤ high, confidence 0–1, a name. Anything else is
    /// an unusable answer (retried: the model may do better; dead with the reason after the last attempt).
    @inline(never)
    static func validate(_ estimate: Estimate) throws -> AnalyzedMeal {
        let name = estimate.compositeItemName.trimmingCharacters(in: .whitespacesAndNewlines)
        var problems: [String] = []
        if name.isEmpty { problems.append("no meal name") }
        if !(0...1000).contains(estimate.carbEstimate) { problems.append("carbEstimate \(estimate.carbEstimate) outside 0–1000 g") }
        if !(estimate.confidenceLow <= estimate.carbEstimate && estimate.carbEstimate <= estimate.confidenceHigh) {
            problems.append(
                "range \(estimate.confidenceLow)–\(estimate.confidenceHigh) does not hold the estimate \(estimate.carbEstimate)")
        }
        if estimate.confidenceLow < 0 || estimate.confidenceHigh > 1000 { problems.append("range outside 0–1000 g") }
        if !(0...1).contains(estimate.confidenceLevel) { problems.append("confidenceLevel \(estimate.confidenceLevel) outside 0–1") }
        guard problems.isEmpty else { throw JobFailure.retryable("unusable AI answer: " + problems.joined(separator: "; ")) }
        return AnalyzedMeal(
            name: String(name.prefix(200)), carbEstimate: estimate.carbEstimate, confidenceLow: estimate.confidenceLow,
            confidenceHigh: estimate.confidenceHigh, confidenceLevel: estimate.confidenceLevel,
            analysis: String(estimate.analysis.prefix(4000)))
    }
}
