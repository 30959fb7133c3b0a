import Foundation
import JSON
import Testing

@testable import API

/// `POST /logins`'s body, read by its own `init(members:)`, gives what its `Decodable` twin gives through the API's
/// decoder: the same fields, or the same refusal (code, message, field) for every way a body can be wrong.
@Suite struct LoginBodyDecodingTests {
    /// The body as it was declared before it read its own members.
    struct Twin: Decodable, NullableMembers {
        static let nullableMembers: Set = ["email", "display_name"]
        var provider: String
        // swift-format-ignore: AlwaysUseLowerCamelCase
        var provider_uid: String
        var email: String?
        // swift-format-ignore: AlwaysUseLowerCamelCase
        var display_name: String?
        // swift-format-ignore: AlwaysUseLowerCamelCase
        var client_timestamp: Date
    }

    static let valid =
        #"{"provider":"apple","provider_uid":"001.a","email":"a@example.com","display_name":"A","client_timestamp":"2026-11-22T12:00:00Z"}"#

    static let bodies = [
        valid,
        #"{"provider":"apple","provider_uid":"001.a","client_timestamp":"2026-11-22T12:00:00.123+02:00"}"#,
        #"{"provider":"apple","provider_uid":"001.a","email":null,"display_name":null,"client_timestamp":"2026-11-22T12:00:00Z"}"#,
        #"{"provider_uid":"001.a","client_timestamp":"2026-11-22T12:00:00Z"}"#,
        #"{"provider":null,"provider_uid":"001.a","client_timestamp":"2026-11-22T12:00:00Z"}"#,
        #"{"provider":7,"provider_uid":"001.a","client_timestamp":"2026-11-22T12:00:00Z"}"#,
        #"{"provider":"apple","provider_uid":["x"],"client_timestamp":"2026-11-22T12:00:00Z"}"#,
        #"{"provider":"apple","provider_uid":"001.a","email":false,"client_timestamp":"2026-11-22T12:00:00Z"}"#,
        #"{"provider":"apple","provider_uid":"001.a","display_name":{},"client_timestamp":"2026-11-22T12:00:00Z"}"#,
        #"{"provider":"apple","provider_uid":"001.a","client_timestamp":"yesterday"}"#,
        #"{"provider":"apple","provider_uid":"001.a","client_timestamp":1732233600}"#,
        #"{"provider":"apple","provider_uid":"001.a","client_timestamp":null}"#,
        #"{"provider":"apple","provider_uid":"001.a"}"#,
        #"{"provider":1,"provider_uid":2}"#,
        #"{}"#, #"[]"#, #"null"#, #""text""#, #"3"#,
    ]

    enum Outcome: Equatable {
        case read(provider: String, subject: String, email: String?, name: String?, time: Date)
        case refused(code: String, message: String, details: [String: JSONValue]?)
    }

    static func outcome(_ body: () throws -> (String, String, String?, String?, Date)) -> Outcome {
        do {
            let read = try body()
            return .read(provider: read.0, subject: read.1, email: read.2, name: read.3, time: read.4)
        } catch let error as DecodingError {
            let refusal = JSONBody.refusal(error)
            return .refused(code: refusal.code, message: refusal.message, details: refusal.details)
        } catch {
            return .refused(code: "unexpected", message: "\(error)", details: nil)
        }
    }

    @Test(arguments: bodies)
    func readsAndRefusesAsItsDecodableTwin(_ text: String) throws {
        let value = try JSONParser.parse(text)
        let direct = Self.outcome {
            let body = try JSONBody.decoder.decode(LoginRoutes.LoginBody.self, members: value)
            return (body.provider, body.providerUID, body.email, body.displayName, body.clientTimestamp)
        }
        let twin = Self.outcome {
            let body = try JSONBody.decoder.decode(Twin.self, from: value)
            return (body.provider, body.provider_uid, body.email, body.display_name, body.client_timestamp)
        }
        #expect(direct == twin)
    }

    @Test func aValidBodyIsReadWhole() throws {
        let body = try JSONBody.decoder.decode(LoginRoutes.LoginBody.self, members: try JSONParser.parse(Self.valid))
        #expect(body.provider == "apple" && body.providerUID == "001.a" && body.email == "a@example.com")
        #expect(body.displayName == "A" && body.clientTimestamp == Date(timeIntervalSince1970: 1_795_348_800))
    }
}
