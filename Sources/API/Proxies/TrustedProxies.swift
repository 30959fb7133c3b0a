import Foundation
import HTTPTypes

/// `TRUSTED_PROXIES`: the reverse proxies (a TLS terminator, a Kubernetes ingress) whose `X-Forwarded-For` or RFC 7239
/// `Forwarded` header names the client. Only their word counts: a request from any other peer is its own client,
/// whatever headers it sends, so nobody can pick the address a per-address limit counts against.
package struct TrustedProxies: Sendable, Equatable {
    package var blocks: [IPAddressBlock]

    package init(_ blocks: [IPAddressBlock] = []) { self.blocks = blocks }

    /// Comma-separated CIDR blocks or addresses; nil for a malformed entry.
    package init?(parsing text: String) {
        var blocks: [IPAddressBlock] = []
        for entry in text.split(separator: ",") {
            let trimmed = entry.trimmingCharacters(in: .whitespaces)
            guard let block = IPAddressBlock(trimmed) else { return nil }
            blocks.append(block)
        }
        self.blocks = blocks
    }

    package func trusts(_ address: IPAddress) -> Bool { blocks.contains { $0.contains(address) } }

    static let forwardedFor = HTTPField.Name("X-Forwarded-For")!
    static let forwarded = HTTPField.Name("Forwarded")!

    /// The client of a request that came from `peer`: the peer itself unless it is trusted; then the right-most
    /// forwarded address that is not itself a trusted proxy (each proxy appends the address it received from, so
    /// what lies left of the first untrusted hop was written by the client and is worth nothing). `Forwarded` is
    /// read when present, else `X-Forwarded-For`; every line of the header, in order.
    package func client(peer: String?, headers: HTTPFields) -> String? {
        guard !blocks.isEmpty, let peerText = peer, var current = IPAddress(peerText), trusts(current) else { return peer }
        let hops: [Substring]
        if headers[Self.forwarded] != nil {
            hops = headers[values: Self.forwarded].flatMap { Self.forwardedFor(in: $0) }
        } else {
            hops = headers[values: Self.forwardedFor].flatMap { $0.split(separator: ",") }
        }
        for hop in hops.reversed() {
            // An unparseable hop ("unknown", an obfuscated name) ends the walk at the last proxy that vouched for it.
            guard let address = IPAddress(Self.bareAddress(hop)) else { break }
            current = address
            if !trusts(address) { break }
        }
        return current.description
    }

    /// The `for=` values of one `Forwarded` line: `for=192.0.2.60;proto=http, for="[2001:db8::1]:4711"`.
    static func forwardedFor(in line: String) -> [Substring] {
        line.split(separator: ",").compactMap { element in
            element.split(separator: ";").lazy.map { $0.trimmingCharacters(in: .whitespaces) }
                .first { $0.lowercased().hasPrefix("for=") }
                .map { Substring($0.dropFirst(4)) }
        }
    }

    /// The address of a hop without quotes, IPv6 brackets or a port: `"[2001:db8::1]:4711"` → `2001:db8::1`,
    /// `192.0.2.43:47011` → `192.0.2.43`.
    static func bareAddress(_ hop: Substring) -> Substring {
        var text = hop.trimmingCharacters(in: .whitespaces)[...]
        if text.hasPrefix("\""), text.hasSuffix("\""), text.count >= 2 { text = text.dropFirst().dropLast() }
        if text.hasPrefix("[") {
            return text.dropFirst().prefix { $0 != "]" }
        }
        if text.filter({ $0 == ":" }).count == 1 { return text.prefix { $0 != ":" } }
        return text
    }
}
