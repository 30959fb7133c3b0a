/// A store invariant that did not hold (a server fault, never a client's).
package struct StoreError: Error, CustomStringConvertible, Sendable {
    package let description: String

    package init(_ description: String) { self.description = description }
}
