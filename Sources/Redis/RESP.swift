/// The request half of RESP, Redis's protocol: a command is an array of bulk strings,
/// `*<count>\r\n` then `$<length>\r\n<bytes>\r\n` per argument. hiredis takes commands in this form as they are
/// (`redisAppendFormattedCommand`), which spares its `sdscatfmt` formatting and our copy of each argument into
/// scratch memory; replies are still parsed by hiredis.
enum RESP {
    static func encode(_ arguments: [String], into output: inout [UInt8]) {
        output.append(UInt8(ascii: "*"))
        appendDecimal(arguments.count, to: &output)
        output.append(13)
        output.append(10)
        for argument in arguments {
            let bytes = argument.utf8
            output.append(UInt8(ascii: "$"))
            appendDecimal(bytes.count, to: &output)
            output.append(13)
            output.append(10)
            output.append(contentsOf: bytes)
            output.append(13)
            output.append(10)
        }
    }

    /// A count or length in decimal digits (never negative).
    private static func appendDecimal(_ value: Int, to output: inout [UInt8]) {
        if value < 10 {
            output.append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value))
            return
        }
        var digits:
            (
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8
            ) =
                (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        var rest = value
        withUnsafeMutableBytes(of: &digits) { buffer in
            while rest > 0 {
                buffer[count] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest % 10)
                rest /= 10
                count += 1
            }
            for index in stride(from: count - 1, through: 0, by: -1) { output.append(buffer[index]) }
        }
    }
}
