import Foundation
import JSON
import JobContracts
import Testing

@testable import Queue

/// Every kind of `jobs/` against the contract generated from its file, without naming a kind: the contract exists,
/// and values made from the file's schemas alone (``SchemaSamples``) go through the generated types and come out as
/// the same JSON. A test fails when the generator and the schemas disagree: a member the types leave out, rename or
/// type otherwise, a `null` the types drop, a required member the types let a producer leave out.
@Suite struct JobContractTests {
    @Test func everyJobFileHasAContract() throws {
        let catalog = try JobCatalog.load(directory: repositoryJobsDirectory())
        #expect(Contracts.all.map { $0.name } == catalog.kinds.keys.sorted())
    }

    @Test(arguments: contractKinds)
    func payloadsGoThroughTheContract(kind: String) throws {
        guard let contract = contract(kind) else { return }
        try expectPayloadAgreement(contract, try spec(kind))
    }

    @Test(arguments: contractKinds)
    func resultsGoThroughTheContract(kind: String) throws {
        guard let contract = contract(kind) else { return }
        try expectResultAgreement(contract, try spec(kind))
    }

    private func contract(_ kind: String) -> (any JobContract.Type)? {
        let contract = Contracts.all.first(where: { $0.name == kind })
        if contract == nil { Issue.record("no contract named \(kind)") }
        return contract
    }

    private func spec(_ kind: String) throws -> JobKindSpec {
        try #require(try JobCatalog.load(directory: repositoryJobsDirectory())[kind], "no jobs/\(kind).yml")
    }
}

/// The kinds, as the generated contracts name them.
private let contractKinds: [String] = Contracts.all.map { $0.name }

/// Both samples of the payload schema satisfy it, decode as `C.Parameters` and encode back to themselves; the required
/// members alone decode, and so does each schedule's payload; without any required member both the schema and the
/// contract refuse the payload; the schema also refuses a member of another type, a member too many, and a payload
/// that is not an object.
private func expectPayloadAgreement<C: JobContract>(_ contract: C.Type, _ spec: JobKindSpec) throws {
    let schema = spec.payloadSchema
    for members in [SchemaSamples.Members.all, .required] {
        let sample = SchemaSamples.value(schema.source, members: members)
        #expect(schema.validate(sample) == [], "\(C.name): \(sample.jsonString)")
        let parameters = try JSONValueDecoder().decode(C.Parameters.self, from: sample)
        #expect(try JSONValueEncoder().encode(parameters) == sample, "\(C.name): \(sample.jsonString)")
    }
    guard case .object(let members) = SchemaSamples.value(schema.source, members: .all) else {
        Issue.record("\(C.name)'s payload sample is not an object")
        return
    }
    let requiredOnly = JSONValue.object(members.filter { schema.requires($0.key) })
    #expect(throws: Never.self, "\(C.name): the schema's required members alone") {
        try JSONValueDecoder().decode(C.Parameters.self, from: requiredOnly)
    }
    for schedule in spec.schedules {
        #expect(throws: Never.self, "\(C.name): schedule \(schedule.name)") {
            try JSONValueDecoder().decode(C.Parameters.self, from: schedule.payload)
        }
    }
    #expect(!schema.validate(.array([])).isEmpty, "\(C.name): not an object")
    #expect(!schema.validate(.object(members.merging(["unexpected": 1]) { $1 })).isEmpty, "\(C.name): an extra member")
    for name in members.keys.sorted() {
        var broken = members
        if schema.requires(name) {
            broken[name] = nil
            #expect(!schema.validate(.object(broken)).isEmpty, "\(C.name): without \(name)")
            #expect(throws: DecodingError.self, "\(C.name): the contract requires \(name) too") {
                try JSONValueDecoder().decode(C.Parameters.self, from: .object(broken))
            }
        }
        // A member without a type takes any JSON.
        if schema.source["properties"]?[name]?["type"] != nil {
            broken[name] = [true]
            #expect(!schema.validate(.object(broken)).isEmpty, "\(C.name): \(name) as an array")
        }
    }
}

/// Each sample of the result schema (one per `oneOf` branch, with every member and with the required ones) satisfies
/// it, decodes as `C.Result` and encodes back to itself: the bytes a handler's result is kept as are the schema's. A
/// kind whose file declares no result has none (`Never`).
private func expectResultAgreement<C: JobContract>(_ contract: C.Type, _ spec: JobKindSpec) throws {
    guard let schema = spec.resultSchema else {
        #expect(C.Result.self == Never.self, "\(C.name) declares no result, but its contract has one")
        return
    }
    let samples = SchemaSamples.values(schema.source, members: .all) + SchemaSamples.values(schema.source, members: .required)
    for sample in samples {
        #expect(schema.validate(sample) == [], "\(C.name): \(sample.jsonString)")
        let result = try JSONValueDecoder().decode(C.Result.self, from: sample)
        #expect(try JSONValueEncoder().encode(result) == sample, "\(C.name): \(sample.jsonString)")
    }
}
