import Queue

/// `analysis` (jobs/analysis.yml): the carb estimate of a stored food photo, written as a meal.
package enum AnalysisContract: JobContract {
    package static let name = "analysis"

    package struct Parameters: Codable, Sendable, Equatable {
        package var userId: String
        /// `meal_photos.id`. The payload carries it as a decimal string (the schema's `photoId` pattern): converted
        /// here, in `init(from:)` and `encode(to:)`, and nowhere else.
        package var photoId: Int64
        /// The client's capture metadata (seed 001's `metadata` of `POST /analyze`), left out when there is none.
        package var metadata: [String: String]?

        package init(userId: String, photoId: Int64, metadata: [String: String]? = nil) {
            self.userId = userId
            self.photoId = photoId
            self.metadata = metadata
        }

        enum CodingKeys: CodingKey {
            case userId, photoId, metadata
        }

        package init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            userId = try container.decode(String.self, forKey: .userId)
            let text = try container.decode(String.self, forKey: .photoId)
            guard let photoId = Int64(text) else {
                throw DecodingError.dataCorruptedError(forKey: .photoId, in: container, debugDescription: "'\(text)' is not a photo id")
            }
            self.photoId = photoId
            metadata = try container.decodeIfPresent([String: String].self, forKey: .metadata)
        }

        package func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(userId, forKey: .userId)
            try container.encode(String(photoId), forKey: .photoId)
            try container.encodeIfPresent(metadata, forKey: .metadata)
        }
    }

    /// The meal written, and the estimate as `POST /analyze` answers it.
    package struct Result: Codable, Sendable, Equatable {
        package var mealId: Int64
        package var analysis: Analysis

        package init(mealId: Int64, analysis: Analysis) {
            self.mealId = mealId
            self.analysis = analysis
        }
    }

    /// Seed 001's `analysis` object: grams of carbohydrate, a range around them and how sure the model is (0–1).
    package struct Analysis: Codable, Sendable, Equatable {
        package var carbEstimate: Double
        package var confidenceLow: Double
        package var confidenceHigh: Double
        package var confidenceLevel: Double
        package var analysis: String
        package var compositeItemName: String

        package init(
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
