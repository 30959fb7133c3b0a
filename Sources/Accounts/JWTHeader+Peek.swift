import Foundation

/// The unverified header of a compact JWS, read only to choose (and restrict) the verification key.
struct PeekedHeader: Decodable {
    var alg: String?
    var kid: String?

    init(token: String) throws(TokenError) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let data = Data(base64URLEncoded: String(parts[0])),
            let header = try? JSONDecoder().decode(PeekedHeader.self, from: data)
        else { throw TokenError(.invalid, "malformed token") }
        self = header
    }
}

extension Data {
    /// Decodes base64url (RFC 4648 §5, padding optional) byte by byte: this runs on every request, where
    /// Foundation's string replacing would cost more than the decoding.
    init?(base64URLEncoded text: String) {
        var bytes = [UInt8]()
        bytes.reserveCapacity(text.utf8.count + 3)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "-"): bytes.append(UInt8(ascii: "+"))
            case UInt8(ascii: "_"): bytes.append(UInt8(ascii: "/"))
            default: bytes.append(byte)
            }
        }
        while bytes.count % 4 != 0 { bytes.append(UInt8(ascii: "=")) }
        self.init(base64Encoded: Data(bytes))
    }
}

/// The unverified issuer of a JWT, read only to pick which issuer's keys must verify it.
struct PeekedIssuer: Decodable {
    var iss: String?

    init(token: String) throws(TokenError) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let data = Data(base64URLEncoded: String(parts[1])),
            let claims = try? JSONDecoder().decode(PeekedIssuer.self, from: data)
        else { throw TokenError(.invalid, "malformed token") }
        self = claims
    }
}
