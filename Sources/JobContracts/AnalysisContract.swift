import Queue

/// `analysis` (jobs/analysis.yml): the carb estimate of a stored food photo, written as a meal.
public enum AnalysisContract: JobContract {
    public static let name = "analysis"

    public struct Parameters: Codable, Sendable, Equatable {
        public var userId: String
        /// `meal_photos.id`. The payload carries it as a decimal string (the schema's `photoId` pattern): converted
        /// here, in `init(from:)` and `encode(to:)`, and nowhere else.
        public var photoId: Int64
        /// The client's capture metadata (seed 001's `metadata` of `POST /analyze`), left out when there is none.
        public var metadata: [String: String]?

        public init(userId: String, photoId: Int64, metadata: [String: String]? = nil) {
            self.userId = userId
            self.photoId = photoId
            self.metadata = metadata
        }

        enum CodingKeys: CodingKey {
            case userId, photoId, metadata
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            userId = try container.decode(String.self, forKey: .userId)
            let text = try container.decode(String.self, forKey: .photoId)
            guard let photoId = Int64(text) else {
                throw DecodingError.dataCorruptedError(forKey: .photoId, in: container, debugDescription: "'\(text)' is not a photo id")
            }
            self.photoId = photoId
            metadata = try container.decodeIfPresent([String: String].self, forKey: .metadata)
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(userId, forKey: .userId)
            try container.encode(String(photoId), forKey: .photoId)
            try container.encodeIfPresent(metadata, forKey: .metadata)
        }
    }

    /// The meal written, and the estimate as `POST /analyze` answers it.
    public struct Result: Codable, Sendable, Equatable {
        public var mealId: Int64
        public var analysis: Analysis

        public init(mealId: Int64, analysis: Analysis) {
            self.mealId = mealId
            self.analysis = analysis
        }
    }

    /// Seed 001's `analysis` object: grams of carbohydrate, a range around them and how sure the model is (0–1).
    public struct Analysis: Codable, Sendable, Equatable {
        public var carbEstimate: Double
        public var confidenceLow: Double
        public var confidenceHigh: Double
        public var confidenceLevel: Double
        public var analysis: String
        public var compositeItemName: String

        public init(
            carbEstimate: Double, confidenceLow: Double, confidenceHigh: Double, confidenceLevel: Double, analysis: String,
            compositeItemName: String
        ) {
            self.carbEstimate = carbEstimate
            self.confidenceLow = confidenceLow
            self.confidenceHigh = confidenceHigh
            self.confidenceLevel = confidenceLevel
            self.analysis = analysis
            self.compositeItemName = compositeItemName
        }
    }
}
