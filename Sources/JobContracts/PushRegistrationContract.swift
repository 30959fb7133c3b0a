import Queue

/// `push-registration` (jobs/push-registration.yml): stores or removes a device's push token, one row per token.
package enum PushRegistrationContract: JobContract {
    package static let name = "push-registration"

    package enum Action: String, Codable, Sendable {
        case register, unregister
    }

    package enum Platform: String, Codable, Sendable {
        case ios, android
    }

    /// `register` needs `platform`; `unregister` finds the row by `token` alone.
    package struct Parameters: Codable, Sendable, Equatable {
        package var action: Action
        /// The device's owner; nil for a device registered without signing in.
        package var userId: String?
        package var platform: Platform?
        package var token: String
        package var deviceModel: String?
        package var osVersion: String?
        package var appVersion: String?

        package init(
            action: Action, userId: String? = nil, platform: Platform? = nil, token: String, deviceModel: String? = nil,
            osVersion: String? = nil, appVersion: String? = nil
        ) {
            self.action = action
            self.userId = userId
            self.platform = platform
            self.token = token
            self.deviceModel = deviceModel
            self.osVersion = osVersion
            self.appVersion = appVersion
        }
    }

    /// A register's `deviceId` (the row's id, a lowercase UUID), or an unregister's `unregistered` (always true) and
    /// `removed` (whether there was a row).
    package struct Result: Codable, Sendable, Equatable {
        package var deviceId: String?
        package var unregistered: Bool?
        package var removed: Bool?

        package init(deviceId: String? = nil, unregistered: Bool? = nil, removed: Bool? = nil) {
            self.deviceId = deviceId
            self.unregistered = unregistered
            self.removed = removed
        }
    }
}
