/// Redis Cluster's key → slot function: CRC16 (XMODEM) of the key, or of its hash tag (the text between the first `{`
/// and the next `}`, when not empty), modulo 16,384. Keys with one tag share a slot, so one node holds them all.
public enum HashSlot {
    public static let count = 16_384

    public static func of(_ key: String) -> Int {
        var utf8 = Array(key.utf8)
        if let open = utf8.firstIndex(of: UInt8(ascii: "{")),
            let close = utf8[(open + 1)...].firstIndex(of: UInt8(ascii: "}")), close > open + 1
        {
            utf8 = Array(utf8[(open + 1)..<close])
        }
        var crc: UInt16 = 0
        for byte in utf8 { crc = (crc << 8) ^ table[Int(UInt8(truncatingIfNeeded: crc >> 8) ^ byte)] }
        return Int(crc) & (count - 1)
    }

    /// CRC16-CCITT (XMODEM: polynomial 0x1021, initial value 0), a byte at a time.
    private static let table: [UInt16] = (0..<256).map { byte in
        var crc = UInt16(byte) << 8
        for _ in 0..<8 { crc = crc & 0x8000 != 0 ? (crc << 1) ^ 0x1021 : crc << 1 }
        return crc
    }
}
