import Queue

/// `push-registration` (jobs/push-registration.yml): stores or removes a device's push token, one row per token.
public enum PushRegistrationContract: JobContract {
    public static let name = "push-registration"

    public enum Action: String, Codable, Sendable {
        case register, unregister
    }

    public enum Platform: String, Codable, Sendable {
        case ios, android
    }

    /// `register` needs `platform`; `unregister` finds the row by `token` alone.
    public struct Parameters: Codable, Sendable, Equatable {
        public var action: Action
        /// The device's owner; nil for a device registered without signing in.
        public var userId: String?
        public var platform: Platform?
        public var token: String
        public var deviceModel: String?
        public var osVersion: String?
        public var appVersion: String?

        public init(
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
    public struct Result: Codable, Sendable, Equatable {
        public var deviceId: String?
        public var unregistered: Bool?
        public var removed: Bool?

        public init(deviceId: String? = nil, unregistered: Bool? = nil, removed: Bool? = nil) {
            self.deviceId = deviceId
            self.unregistered = unregistered
            self.removed = removed
        }
    }
}
