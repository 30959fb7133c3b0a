import CCurl
import Dispatch
import Foundation

/// Sends mail through an SMTP server with libcurl (`SMTP_URL`: `smtp://host:port`, STARTTLS when the server offers
/// it, or `smtps://user:password@host:465`, TLS from the start; credentials from the URL). libcurl builds the MIME
/// message and speaks SMTP; this type only sets options. `curl_easy_perform` blocks, so each send runs on a serial
/// dispatch queue of its own, never on Swift's cooperative pool: sign-in links are few, one at a time is plenty.
package final class SMTPMailer: Sendable {
    let url: String
    /// For logs and errors: the URL without its credentials.
    package let displayURL: String
    private let queue = DispatchQueue(label: "carbscan.smtp")

    /// - Throws: `.permanent` when `url` is not an `smtp://` or `smtps://` URL with a host.
    package init(url: String) throws(MailError) {
        guard let components = URLComponents(string: url), let scheme = components.scheme, ["smtp", "smtps"].contains(scheme),
            let host = components.host, !host.isEmpty
        else { throw MailError(.permanent, "SMTP_URL must be smtp://host[:port] or smtps://[user:password@]host[:port]") }
        self.url = url
        self.displayURL = "\(scheme)://\(host)\(components.port.map { ":\($0)" } ?? "")"
        _ = Self.globalInit
    }

    private static let globalInit: Void = { _ = carbscan_curl_global_init_default() }()

    package func send(_ message: MailMessage) async throws(MailError) {
        let result: Result<Void, MailError> = await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: self.perform(message)) }
        }
        try result.get()
    }

    private func perform(_ message: MailMessage) -> Result<Void, MailError> {
        guard let curl = curl_easy_init() else { return .failure(MailError(.retryable, "libcurl could not make a handle")) }
        defer { curl_easy_cleanup(curl) }
        let recipients: UnsafeMutablePointer<curl_slist>? = curl_slist_append(nil, "<\(Self.address(message.to))>")
        var headers: UnsafeMutablePointer<curl_slist>? = nil
        for line in Self.headers(message) { headers = curl_slist_append(headers, line) }
        defer {
            curl_slist_free_all(recipients)
            curl_slist_free_all(headers)
        }
        guard let mime = curl_mime_init(curl) else { return .failure(MailError(.retryable, "libcurl could not make a MIME message")) }
        defer { curl_mime_free(mime) }
        let part = curl_mime_addpart(mime)
        // Mail lines end in CRLF (RFC 5322); quoted-printable then keeps long lines and UTF-8 safe for any server.
        let text = Array(message.text.replacingOccurrences(of: "\r\n", with: "\n").replacingOccurrences(of: "\n", with: "\r\n").utf8)
        text.withUnsafeBufferPointer { bytes in
            bytes.withMemoryRebound(to: CChar.self) { _ = curl_mime_data(part, $0.baseAddress, $0.count) }
        }
        curl_mime_type(part, "text/plain; charset=utf-8")
        curl_mime_encoder(part, "quoted-printable")

        var code = carbscan_curl_easy_setopt_pointer(curl, CURLOPT_URL, url)
        if code == CURLE_OK { code = carbscan_curl_easy_setopt_pointer(curl, CURLOPT_MAIL_FROM, "<\(Self.address(message.from))>") }
        if code == CURLE_OK { code = carbscan_curl_easy_setopt_slist(curl, CURLOPT_MAIL_RCPT, recipients) }
        if code == CURLE_OK { code = carbscan_curl_easy_setopt_slist(curl, CURLOPT_HTTPHEADER, headers) }
        if code == CURLE_OK { code = carbscan_curl_easy_setopt_pointer(curl, CURLOPT_MIMEPOST, UnsafeRawPointer(mime)) }
        if code == CURLE_OK, url.hasPrefix("smtp://") {
            code = carbscan_curl_easy_setopt_long(curl, CURLOPT_USE_SSL, Int(CURLUSESSL_TRY.rawValue))
        }
        if code == CURLE_OK { code = carbscan_curl_easy_setopt_long(curl, CURLOPT_CONNECTTIMEOUT_MS, 10_000) }
        if code == CURLE_OK { code = carbscan_curl_easy_setopt_long(curl, CURLOPT_TIMEOUT_MS, 30_000) }
        if code == CURLE_OK { code = carbscan_curl_easy_setopt_long(curl, CURLOPT_NOSIGNAL, 1) }
        guard code == CURLE_OK else { return .failure(MailError(.permanent, "libcurl refused an option: \(Self.text(code))")) }
        code = curl_easy_perform(curl)
        var reply = 0
        _ = carbscan_curl_easy_getinfo_long(curl, CURLINFO_RESPONSE_CODE, &reply)
        guard code != CURLE_OK else { return .success(()) }
        return .failure(Self.classify(code, reply: reply, server: displayURL))
    }

    /// SMTP's own verdict first: a 5xx reply (mailbox unavailable, relay denied, bad credentials) will not change on
    /// another try; a 4xx (greylisting, a full queue) and anything that did not get a reply (no connection, timeout)
    /// may.
    static func classify(_ code: CURLcode, reply: Int, server: String) -> MailError {
        let detail = "SMTP server \(server)\(reply > 0 ? " answered \(reply)" : ""): \(text(code))"
        if reply >= 500 || code == CURLE_LOGIN_DENIED || code == CURLE_URL_MALFORMAT || code == CURLE_UNSUPPORTED_PROTOCOL {
            return MailError(.permanent, detail)
        }
        return MailError(.retryable, detail)
    }

    static func headers(_ message: MailMessage) -> [String] {
        let date = Date().formatted(
            Date.VerbatimFormatStyle(
                format:
                    "\(weekday: .abbreviated), \(day: .twoDigits) \(month: .abbreviated) \(year: .defaultDigits) \(hour: .twoDigits(clock: .twentyFourHour, hourCycle: .zeroBased)):\(minute: .twoDigits):\(second: .twoDigits) +0000",
                locale: Locale(identifier: "en_US_POSIX"), timeZone: .gmt, calendar: Calendar(identifier: .gregorian)))
        let domain = address(message.from).split(separator: "@").last.map(String.init) ?? "localhost"
        return [
            "Date: \(date)", "From: \(message.from)", "To: \(message.to)", "Subject: \(encodedWord(message.subject))",
            "Message-ID: <\(UUID().uuidString.lowercased())@\(domain)>",
        ]
    }

    /// `Name <a@b>` → `a@b`.
    static func address(_ mailbox: String) -> String {
        guard let open = mailbox.lastIndex(of: "<"), let close = mailbox.lastIndex(of: ">"), open < close else {
            return mailbox.trimmingCharacters(in: .whitespaces)
        }
        return String(mailbox[mailbox.index(after: open)..<close])
    }

    /// A header value outside ASCII as an RFC 2047 encoded word.
    static func encodedWord(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { !$0.isASCII }) else { return text }
        return "=?UTF-8?B?\(Data(text.utf8).base64EncodedString())?="
    }

    static func text(_ code: CURLcode) -> String { String(cString: curl_easy_strerror(code)) }
}
