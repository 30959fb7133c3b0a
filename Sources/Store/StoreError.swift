/// A store invariant that did not hold (a server fault, never a client's).
public struct StoreError: Error, CustomStringConvertible, Sendable {
    public let description: String

    public init(_ description: String) { self.description = description }
}
