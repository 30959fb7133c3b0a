import JSON

extension JSONSchema.Format {
    /// Checks the formats for real: a payload with `photoId: "abc"` must fail at enqueue, not in a
    /// handler's SQL three retries later.
    func accepts(_ text: String) -> Bool {
        switch self {
        case .uuid: Self.isUUID(text)
        case .dateTime: Self.isDateTime(text)
        case .date: RFC3339.isFullDate(text)
        case .email: Self.isEmail(text)
        }
    }

    /// 8-4-4-4-12 hex digits, either case.
    static func isUUID(_ text: String) -> Bool {
        let bytes = text.utf8
        guard bytes.count == 36 else { return false }
        for (index, byte) in bytes.enumerated() {
            if index == 8 || index == 13 || index == 18 || index == 23 {
                guard byte == UInt8(ascii: "-") else { return false }
            } else {
                guard
                    (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte | 0x20)
                else { return false }
            }
        }
        return true
    }

    /// RFC 3339 `date-time`: full-date "T" time with seconds, optional fraction, and `Z` or `±hh:mm`.
    static func isDateTime(_ text: String) -> Bool { RFC3339.isValid(text) }

    /// A pragmatic address check (local@domain.tld, no spaces): full RFC 5322 accepts things no mail
    /// provider does, and the real check is a confirmation mail.
    static func isEmail(_ text: String) -> Bool {
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, let local = parts.first, let domain = parts.last, !local.isEmpty,
            local.count <= 64, text.count <= 254,
            !text.contains(where: { $0.isWhitespace || $0.isNewline || $0 == "<" || $0 == ">" })
        else { return false }
        let labels = domain.split(separator: ".", omittingEmptySubsequences: false)
        return labels.count >= 2 && labels.allSatisfy { !$0.isEmpty && !$0.hasPrefix("-") && !$0.hasSuffix("-") }
            && !local.hasPrefix(".") && !local.hasSuffix(".") && !local.contains("..")
    }
}
