/// The document's open enums (`anyOf` a known `enum` and any string) come out of the generator as a struct with
/// `value1`, the known case or nil, and `value2`, the text as sent: a value added by a later server decodes (as
/// `value2` alone) instead of failing the whole answer in an app already shipped. `rawValue` reads either.
extension Components.Schemas.ErrorCode {
    /// The code as the server sent it, known to this client or not.
    public var rawValue: String { value2 ?? value1?.rawValue ?? "" }
}

extension Components.Schemas.JobStatus {
    public var rawValue: String { value2 ?? value1?.rawValue ?? "" }
}

extension Components.Schemas.Tier {
    public var rawValue: String { value2 ?? value1?.rawValue ?? "" }
}

extension Components.Schemas.SubscriptionState {
    public var rawValue: String { value2 ?? value1?.rawValue ?? "" }
}

extension Components.Schemas.ChatMessageType {
    public var rawValue: String { value2 ?? value1?.rawValue ?? "" }
}
