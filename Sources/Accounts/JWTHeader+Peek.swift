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
    init?(base64URLEncoded text: String) {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64.append("=") }
        self.init(base64Encoded: base64)
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
