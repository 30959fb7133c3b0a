import Foundation
import JSON
import Store

/// The user as the seed shows it (`auth/apple`, `auth/me`).
struct UserDTO: Encodable {
    var id: String
    @Nullable var email: String?
    @Nullable var firstName: String?
    @Nullable var lastName: String?
    var subscriptionTier: String
    @Nullable var profileImageUrl: String?
    var emailRemindersEnabled: Bool
    var timeZone: String

    init(_ user: User) {
        id = user.id
        email = user.email
        firstName = user.firstName
        lastName = user.lastName
        subscriptionTier = user.tier.rawValue
        profileImageUrl = user.profileImageUrl
        emailRemindersEnabled = user.emailRemindersEnabled
        timeZone = user.timeZone
    }
}

/// A meal in history and sync answers. `confidenceLevel` is a string, as seed 001's history example has it.
/// `imageUrl` is the path of its photo (`GET meals/{id}/image`) while the photo is kept, null without one.
struct MealDTO: Encodable {
    var id: Int64
    var localId: String?
    var name: String
    var carbEstimate: Double
    var confidenceLevel: String?
    var imageUrl: String?
    var createdAt: Date
    var updatedAt: Date

    init(_ meal: Meal) {
        id = meal.id
        localId = meal.localId
        name = meal.name
        carbEstimate = meal.carbEstimate
        confidenceLevel = meal.confidenceLevel.map { String(format: "%.2f", $0) }
        imageUrl = meal.photoID == nil ? nil : MealsRoutes.imagePath(ofMeal: meal.id)
        createdAt = meal.createdAt
        updatedAt = meal.updatedAt
    }

    enum CodingKeys: String, CodingKey {
        case id, localId, name, carbEstimate, confidenceLevel, imageUrl, createdAt, updatedAt
    }

    /// Nil members are written as `null`, as seed 001's bodies have them. A page holds up to 100 meals, so the API's
    /// encoder gets them written straight (`streamingObject`); any other encoder, the same members through the keyed
    /// container (`MealDTOEncodingTests` holds the two to one output).
    func encode(to encoder: any Encoder) throws {
        if let object = encoder.streamingObject() {
            object.write(CodingKeys.id.rawValue, id)
            object.write(CodingKeys.localId.rawValue, localId)
            object.write(CodingKeys.name.rawValue, name)
            try object.write(CodingKeys.carbEstimate.rawValue, carbEstimate)
            object.write(CodingKeys.confidenceLevel.rawValue, confidenceLevel)
            object.write(CodingKeys.imageUrl.rawValue, imageUrl)
            object.write(CodingKeys.createdAt.rawValue, createdAt)
            object.write(CodingKeys.updatedAt.rawValue, updatedAt)
            return
        }
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(localId, forKey: .localId)
        try container.encode(name, forKey: .name)
        try container.encode(carbEstimate, forKey: .carbEstimate)
        try container.encode(confidenceLevel, forKey: .confidenceLevel)
        try container.encode(imageUrl, forKey: .imageUrl)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(updatedAt, forKey: .updatedAt)
    }
}

/// Checks on client strings: trimmed, non-empty where required, bounded.
enum Field {
    static func text(_ value: String?, _ name: String, max: Int, required: Bool = false) throws -> String? {
        guard let value else {
            if required { throw APIError.validation(name, "field '\(name)' is required") }
            return nil
        }
        let trimmed = trimmingWhitespace(value)
        if trimmed.isEmpty {
            if required { throw APIError.validation(name, "field '\(name)' must not be empty") }
            return nil
        }
        // Characters as JSON Schema's maxLength counts them (code points), before trimming: the document's bound.
        guard value.unicodeScalars.count <= max else {
            throw APIError.validation(name, "field '\(name)' must be at most \(max) characters")
        }
        return trimmed
    }

    /// `value` without leading and trailing white space (Unicode's White_Space, as Foundation's
    /// `.whitespacesAndNewlines`); the common case, nothing to trim, returns `value` itself.
    static func trimmingWhitespace(_ value: String) -> String {
        let scalars = value.unicodeScalars
        guard let first = scalars.first, let last = scalars.last, isWhitespace(first) || isWhitespace(last) else { return value }
        let start = scalars.firstIndex { !isWhitespace($0) } ?? scalars.endIndex
        let end = scalars.lastIndex { !isWhitespace($0) }.map(scalars.index(after:)) ?? start
        return start < end ? String(scalars[start..<end]) : ""
    }

    /// Unicode's White_Space; an ASCII scalar is answered without the property table (tab to carriage return, space).
    static func isWhitespace(_ scalar: Unicode.Scalar) -> Bool {
        scalar.isASCII ? scalar == " " || (0x09...0x0D).contains(scalar.value) : scalar.properties.isWhitespace
    }

    static func number(_ value: Double?, _ name: String, in range: ClosedRange<Double>) throws -> Double? {
        guard let value else { return nil }
        guard value.isFinite, range.contains(value) else {
            throw APIError.validation(
                name, "field '\(name)' must be between \(range.lowerBound.formatted()) and \(range.upperBound.formatted())")
        }
        return value
    }
}
