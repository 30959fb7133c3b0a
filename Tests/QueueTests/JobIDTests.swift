import Foundation
import Testing

@testable import Queue

@Suite struct JobIDTests {
    /// Single ids come from randomness read ahead; across several refills of that pool no id (and no byte range)
    /// is handed out twice, and every id is a lower-case version 4 UUID.
    @Test func idsAreDistinctVersion4UUIDsOneByOneAndInBulk() throws {
        var seen = Set<String>()
        for _ in 0..<1_000 { seen.insert(JobID.random().rawValue) }
        for id in JobID.random(count: 3_000) { seen.insert(id.rawValue) }
        for _ in 0..<200 { for id in JobID.random(count: 5) { seen.insert(id.rawValue) } }
        #expect(seen.count == 5_000)
        for id in seen {
            let uuid = try #require(UUID(uuidString: id))
            #expect(uuid.lowercasedString == id)
            let bytes = withUnsafeBytes(of: uuid.uuid) { Array($0) }
            #expect(bytes[6] >> 4 == 4)
            #expect(bytes[8] >> 6 == 0b10)
        }
    }
}
