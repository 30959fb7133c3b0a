import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A job's id: a random (version 4) UUID, so ids are unguessable and fit a Postgres `uuid` column
/// (effects are made idempotent by keying them on it).
public struct JobID: Sendable, Hashable, Codable, CustomStringConvertible, RawRepresentable {
    public let rawValue: String

    public init?(rawValue: String) {
        guard let uuid = UUID(uuidString: rawValue) else { return nil }
        self.rawValue = uuid.lowercasedString
    }

    init(trusted rawValue: String) { self.rawValue = rawValue }

    public static func random() -> JobID { JobID(trusted: UUID.randomV4().lowercasedString) }

    /// `count` random ids, their randomness read from the kernel 256 bytes (16 ids) per call.
    static func random(count: Int) -> [JobID] { UUID.randomV4(count: count).map { JobID(trusted: $0.lowercasedString) } }

    public var description: String { rawValue }
}

extension UUID {
    /// A random (version 4) UUID from the kernel (`getentropy`). Foundation's `UUID()` on Linux opened
    /// `/dev/urandom` for each one, which showed in every enqueueing request's profile. Made in place, without the
    /// batch's two arrays and its lock-step map (the id was 11.8% of a one-by-one sending loop's user CPU samples).
    public static func randomV4() -> UUID {
        var uuid: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &uuid) { raw in
            entropyPool.withLock { $0.take(into: raw) }
            raw[6] = raw[6] & 0x0F | 0x40  // version 4
            raw[8] = raw[8] & 0x3F | 0x80  // RFC 4122 variant
        }
        return UUID(uuid: uuid)
    }

    /// `count` random (version 4) UUIDs; `getentropy` fills up to 256 bytes per call. A few at a time come from
    /// kernel randomness read ahead (each byte handed out once): a system call per id was 5% of a one-by-one
    /// producer's CPU.
    public static func randomV4(count: Int) -> [UUID] {
        var bytes = [UInt8](repeating: 0, count: count * 16)
        bytes.withUnsafeMutableBytes { raw in
            if raw.count <= EntropyPool.size / 4 {
                entropyPool.withLock { $0.take(into: raw) }
            } else {
                EntropyPool.fill(raw)
            }
        }
        return (0..<count).map { index in
            bytes.withUnsafeMutableBytes { raw in
                let uuid = UnsafeMutableRawBufferPointer(rebasing: raw[index * 16..<index * 16 + 16])
                uuid[6] = uuid[6] & 0x0F | 0x40  // version 4
                uuid[8] = uuid[8] & 0x3F | 0x80  // RFC 4122 variant
                return UUID(uuid: uuid.loadUnaligned(as: uuid_t.self))
            }
        }
    }

    /// `uuidString` in lower case (as Postgres prints UUIDs), without the intermediate upper-case string.
    public var lowercasedString: String {
        withUnsafeBytes(of: uuid) { raw in
            String(unsafeUninitializedCapacity: 36) { output in
                var index = 0
                for position in 0..<16 {
                    if position == 4 || position == 6 || position == 8 || position == 10 {
                        output[index] = UInt8(ascii: "-")
                        index += 1
                    }
                    output[index] = Self.hexDigit(raw[position] >> 4)
                    output[index + 1] = Self.hexDigit(raw[position] & 0x0F)
                    index += 2
                }
                return index
            }
        }
    }

    /// The lower-case hex digit of a nibble (0–15).
    @inline(__always)
    private static func hexDigit(_ nibble: UInt8) -> UInt8 { nibble < 10 ? UInt8(ascii: "0") &+ nibble : UInt8(ascii: "a") &+ nibble &- 10 }
}

/// Kernel randomness read 4 KiB ahead, for the ids made a few at a time.
private let entropyPool = Mutex(EntropyPool())

private struct EntropyPool: ~Copyable {
    static let size = 4096
    private var bytes = [UInt8](repeating: 0, count: size)
    private var used = size

    /// Copies the next `destination.count` (≤ size) unused bytes out, refilling first when too few are left.
    mutating func take(into destination: UnsafeMutableRawBufferPointer) {
        if used + destination.count > Self.size {
            bytes.withUnsafeMutableBytes { Self.fill($0) }
            used = 0
        }
        bytes.withUnsafeMutableBytes { pool in
            let slice = UnsafeMutableRawBufferPointer(rebasing: pool[used..<used + destination.count])
            destination.copyMemory(from: UnsafeRawBufferPointer(slice))
            slice.initializeMemory(as: UInt8.self, repeating: 0)
        }
        used += destination.count
    }

    /// Fills `raw` from the kernel, 256 bytes (getentropy's limit) per call.
    static func fill(_ raw: UnsafeMutableRawBufferPointer) {
        var offset = 0
        while offset < raw.count {
            let length = min(256, raw.count - offset)
            if getentropy(raw.baseAddress! + offset, length) != 0 {
                // Not expected on Linux ≥ 3.17; the system generator reads the same kernel source.
                var generator = SystemRandomNumberGenerator()
                for index in offset..<offset + length { raw[index] = generator.next() }
            }
            offset += length
        }
    }
}
