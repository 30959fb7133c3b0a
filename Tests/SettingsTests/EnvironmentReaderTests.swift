import Foundation
import Settings
import Testing

/// One reading for every variable: white space trimmed, blank the same as unset, and a value that is set but wrong
/// refused naming its variable instead of falling back to the default.
@Suite struct EnvironmentReaderTests {
    @Test func blankIsUnsetAndValuesAreTrimmed() throws {
        let environment: EnvironmentReader = ["EMPTY": "", "SPACES": "  \t", "PADDED": "  value \t", "PORT": " 8081 "]
        #expect(environment.text("EMPTY") == nil)
        #expect(environment.text("SPACES") == nil)
        #expect(environment.text("ABSENT") == nil)
        #expect(environment.text("PADDED") == "value")
        #expect(try environment.integer("EMPTY", default: 7, in: 1...10) == 7)
        #expect(try environment.integer("SPACES", default: 7, in: 1...10) == 7)
        #expect(try environment.integer("PORT", default: 8080, in: 0...65535) == 8081)
        #expect(try environment.seconds("EMPTY", default: .seconds(3), in: 0...10) == .seconds(3))
        #expect(try environment.bool("SPACES", default: true) == true)
        #expect(try environment.timeZone("EMPTY", default: .gmt) == .gmt)
        #expect(environment.list("EMPTY").isEmpty)
        #expect(try environment.pairs("SPACES").isEmpty)
        // A secret keeps its spaces (a password may end in one); only an empty one is unset.
        #expect(environment.secret("PADDED") == "  value \t")
        #expect(environment.secret("EMPTY") == nil)
    }

    @Test func aBadNumberIsRefusedNamingTheVariable() throws {
        let environment: EnvironmentReader = ["WORKERS": "ten", "LIMIT": "11", "WAIT": "-1", "TTL": "2.5"]
        let notANumber = #expect(throws: SettingError.self) { try environment.integer("WORKERS", default: 1, in: 1...10) }
        #expect(notANumber?.variable == "WORKERS")
        #expect(notANumber?.description == "WORKERS: must be a whole number from 1 to 10, not 'ten'")
        let outOfRange = #expect(throws: SettingError.self) { try environment.integer("LIMIT", default: 1, in: 1...10) }
        #expect(outOfRange?.description == "LIMIT: must be a whole number from 1 to 10, not '11'")
        let negative = #expect(throws: SettingError.self) { try environment.seconds("WAIT", default: .zero, in: 0...30) }
        #expect(negative?.description == "WAIT: must be a number of seconds from 0 to 30, not '-1'")
        let fraction = #expect(throws: SettingError.self) { try environment.wholeSeconds("TTL", default: .seconds(1)) }
        #expect(fraction?.description == "TTL: must be a positive whole number of seconds, not '2.5'")
    }

    @Test func typedValuesParse() throws {
        let environment: EnvironmentReader = [
            "WAIT": "2.5", "ON": "Yes", "OFF": "0", "MAYBE": "maybe", "ZONE": "Europe/Berlin", "MARS": "Mars/Olympus",
            "BASE": "http://127.0.0.1:8080/ ", "IDS": " a, ,b ,", "TIERS": "price_a=pro, price_b = essentials", "HALF": "price_a",
        ]
        #expect(try environment.seconds("WAIT", default: .zero, in: 0...30) == .milliseconds(2500))
        #expect(try environment.bool("ON", default: false) == true)
        #expect(try environment.bool("OFF", default: true) == false)
        let maybe = #expect(throws: SettingError.self) { try environment.bool("MAYBE", default: false) }
        #expect(maybe?.description == "MAYBE: must be true or false, not 'maybe'")
        #expect(try environment.timeZone("ZONE", default: .gmt).identifier == "Europe/Berlin")
        let mars = #expect(throws: SettingError.self) { try environment.timeZone("MARS", default: .gmt) }
        #expect(mars?.variable == "MARS")
        #expect(environment.baseURL("BASE") == "http://127.0.0.1:8080")
        #expect(environment.list("IDS") == ["a", "b"])
        #expect(try environment.pairs("TIERS") == ["price_a": "pro", "price_b": "essentials"])
        let half = #expect(throws: SettingError.self) { try environment.pairs("HALF") }
        #expect(half?.variable == "HALF")
    }
}
