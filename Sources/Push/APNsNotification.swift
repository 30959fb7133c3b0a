import JSON

/// One alert notification: what the device shows, and the app's own members beside `aps`.
package struct APNsNotification: Sendable {
    package var title: String
    package var body: String
    /// Members of the payload beside `aps` (the app reads them when the notification is opened).
    package var custom: [String: JSONValue]
    /// `apns-collapse-id`: a device shows only the newest notification of one id (at most 64 bytes).
    package var collapseID: String?
    /// `apns-expiration`: how long APNs keeps trying a device that is offline; nil: 24 hours.
    package var expiresAfter: Duration?

    package init(
        title: String, body: String, custom: [String: JSONValue] = [:], collapseID: String? = nil, expiresAfter: Duration? = nil
    ) {
        self.title = title
        self.body = body
        self.custom = custom
        self.collapseID = collapseID
        self.expiresAfter = expiresAfter
    }

    /// `{"aps":{"alert":{"title":…,"body":…},"sound":"default"}, …custom}`: APNs refuses a payload over 4 KB.
    package var payload: [UInt8] {
        var members = custom
        members["aps"] = ["alert": ["title": .string(title), "body": .string(body)], "sound": "default"]
        return Array(JSONValue.object(members).jsonString.utf8)
    }
}
