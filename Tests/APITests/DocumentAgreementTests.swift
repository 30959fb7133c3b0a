import Foundation
import HTTPTypes
import Testing

/// Where the server and its OpenAPI document disagreed (found by `ops/contract.sh`'s fuzzing): what the document
/// forbids is refused with 400 and the field, what it allows is taken, and nothing of the kind is a 500.
@Suite struct DocumentAgreementTests {
    static func refused(_ result: CallResult, field: String, _ comment: Comment? = nil) {
        #expect(result.status == 400, comment ?? "\(result.text)")
        #expect(result.errorCode == "VALIDATION_ERROR", "\(result.text)")
        #expect(result.json["error"]["details"]["field"].string == field, "\(result.text)")
    }

    /// Optional members the document does not mark `nullable` refuse `null`; those it marks take it.
    @Test func nullIsTakenOnlyWhereTheDocumentSaysNullable() async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            let token = String(repeating: "ab", count: 32)
            let device = try await client.call(
                .post, "devices/register", token: account.accessToken,
                json: ["deviceToken": token, "platform": "ios", "appVersion": NSNull()])
            Self.refused(device, field: "appVersion")
            let analyze = try await client.call(
                .post, "analyze", token: account.accessToken,
                json: ["imageBase64": Data(AnalyzeRoutesTests.jpeg).base64EncodedString(), "metadata": NSNull()])
            Self.refused(analyze, field: "metadata")
            let profile = try await client.call(
                .post, "users/me", token: account.accessToken, json: ["firstName": NSNull(), "timeZone": NSNull()])
            #expect(profile.status == 200, "\(profile.text)")
            let rows = try await api.database.query("SELECT count(*) AS n FROM devices")
            #expect(try rows[rows.startIndex].decode("n", as: Int.self) == 0)
        }
    }

    /// The document's token patterns have no room for white space: a padded token is refused, not trimmed.
    @Test func aDeviceTokenIsTakenExactlyAsTheDocumentDescribesIt() async throws {
        try await TestAPI.run { api, client in
            let padded = try await client.call(
                .post, "devices/register", json: ["deviceToken": " " + String(repeating: "ab", count: 32), "platform": "ios"])
            Self.refused(padded, field: "deviceToken")
        }
    }

    @Test func aBlankImageURLIsNotAnHTTPSURL() async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            let blank = try await client.call(.post, "users/me", token: account.accessToken, json: ["profileImageUrl": ""])
            Self.refused(blank, field: "profileImageUrl")
        }
    }

    /// Postgres text cannot hold U+0000: refused up front, naming the field, instead of a 500 from the insert.
    @Test func textWithUPlus0000IsRefusedNotAServerError() async throws {
        try await TestAPI.run { api, client in
            let register = try await client.call(
                .post, "auth/register", json: ["email": "nul@example.com", "password": "correct horse", "lastName": "a\u{0}b"])
            Self.refused(register, field: "lastName")
            let account = try await api.register(client)
            let meals = try await client.call(
                .post, "meals/sync", token: account.accessToken,
                json: ["localMeals": [["localId": "m1", "name": "x\u{0}", "carbEstimate": 1, "createdAt": "2026-11-20T12:00:00Z"]]])
            Self.refused(meals, field: "localMeals[0].name")
        }
    }

    /// maxLength counts code points, as JSON Schema does: 100 letters each with a combining accent are 200.
    @Test func lengthsAreCountedAsTheDocumentCountsThem() async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            let accented = String(repeating: "e\u{301}", count: 100)
            let long = try await client.call(.post, "users/me", token: account.accessToken, json: ["firstName": accented])
            Self.refused(long, field: "firstName")
            let fits = try await client.call(
                .post, "users/me", token: account.accessToken, json: ["firstName": String(repeating: "e\u{301}", count: 50)])
            #expect(fits.status == 200, "\(fits.text)")
        }
    }

    /// The analysis kind's schema wants a date-time: the route checks it first (it answered 500 when the enqueue
    /// refused the payload).
    @Test func aCaptureTimestampThatIsNotADateTimeIsRefused() async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            try await api.setTier(.pro, userID: account.id)
            let response = try await client.call(
                .post, "analyze", token: account.accessToken,
                json: ["imageBase64": Data(AnalyzeRoutesTests.jpeg).base64EncodedString(), "metadata": ["captureTimestamp": "yesterday"]])
            Self.refused(response, field: "metadata.captureTimestamp")
            let photos = try await api.database.query("SELECT count(*) AS n FROM meal_photos")
            #expect(try photos[photos.startIndex].decode("n", as: Int.self) == 0)
        }
    }

    @Test func aMultipartPartTheDocumentDoesNotNameIsRefused() async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            let boundary = "b0undary"
            var body = Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"gps\"\r\n\r\n52,13\r\n".utf8)
            body += Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"image\"; filename=\"meal\"\r\n\r\n".utf8)
            body += Data(AnalyzeRoutesTests.png) + Data("\r\n--\(boundary)--\r\n".utf8)
            let response = try await client.call(
                .post, "analyze", token: account.accessToken, bytes: Array(body),
                headers: [.contentType: "multipart/form-data; boundary=\(boundary)"])
            Self.refused(response, field: "gps")
        }
    }

    /// A signed event whose members have other types than the document's (`created: true`) is not an event.
    @Test func aStripeEventOfTheWrongShapeIsRefused() async throws {
        try await TestAPI.run(environment: BillingRoutesTests.environment) { api, client in
            for body in [
                #"{"id":"evt_1","type":"invoice.paid","created":true}"#, #"{"id":"evt_2","type":"invoice.paid","data":[]}"#,
                #"{"id":"evt_3","type":"invoice.paid","created":-1}"#,
            ] {
                let response = try await BillingRoutesTests.post(client, body, signature: BillingRoutesTests.signature(body))
                #expect(response.status == 400 && response.errorCode == "VALIDATION_ERROR", "\(body): \(response.text)")
            }
            let fine = #"{"id":"evt_4","type":"invoice.paid","created":1763800000,"data":{"object":{"id":"in_1"}}}"#
            let response = try await BillingRoutesTests.post(client, fine, signature: BillingRoutesTests.signature(fine))
            #expect(response.status == 200, "\(response.text)")
        }
    }
}
