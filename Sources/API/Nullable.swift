/// Writes a nil property as JSON `null` instead of leaving the key out, as seed 001's bodies do
/// (`"profileImageUrl": null`). Synthesized `Encodable` always encodes a wrapped property, so no hand-written
/// `encode(to:)` is needed.
// swift-format-ignore: UseSynthesizedInitializer
// (a property wrapper's init(wrappedValue:) must be spelled out for `@Nullable var x: T? = value` call sites)
@propertyWrapper
struct Nullable<Value: Encodable & Sendable>: Encodable, Sendable {
    var wrappedValue: Value?

    init(wrappedValue: Value?) {
        self.wrappedValue = wrappedValue
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let wrappedValue {
            try container.encode(wrappedValue)
        } else {
            try container.encodeNil()
        }
    }
}
