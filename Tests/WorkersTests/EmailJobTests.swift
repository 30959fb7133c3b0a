import Foundation
import JSON
import Mail
import Queue
import TestSupport
import Testing
import Workers

/// The `email` kind against a real local SMTP server (aiosmtpd): delivered, refused for good, or retried.
@Suite struct EmailJobTests {
    static func handler(_ env: WorkerTestEnvironment, url: String?) throws -> JobRegistry.Handler {
        var services = env.services(WorkerSettings(mailFrom: "CarbScan <noreply@carbscan.test>"))
        services.mailer = try url.map { try SMTPMailer(url: $0) }
        return try #require(Handlers.registry(services: services).handler(for: EmailJob.name))
    }

    static func payload(to: String) -> String {
        let payload: JSONValue = ["to": .string(to), "subject": "Grüße from CarbScan", "text": "Line one.\nZeile zwei: Äpfel, 14 g."]
        return payload.jsonString
    }

    static let context = JobContext(id: .random(), kind: EmailJob.name, attempt: 1, maxAttempts: 6)

    @Test func aMailIsDeliveredWithItsHeadersAndUTF8Text() async throws {
        let sink = try SMTPSink.start()
        defer { sink.stop() }
        try await WorkerTestEnvironment.run { env in
            let result = try await Self.handler(env, url: sink.url)(Self.payload(to: "ada@example.com"), Self.context)
            #expect(result == #"{"sent":true}"#)
            let mail = try #require(sink.messages().first)
            #expect(mail.contains("X-Envelope-From: noreply@carbscan.test"))
            #expect(mail.contains("X-Envelope-To: ada@example.com"))
            #expect(mail.contains("Subject: =?UTF-8?B?\(Data("Grüße from CarbScan".utf8).base64EncodedString())?="))
            #expect(mail.contains("Zeile zwei: =C3=84pfel, 14 g."), "\(mail)")
            #expect(mail.contains("Date: ") && mail.contains("Message-ID: <"))
        }
    }

    /// The server refuses the mailbox (550): no retry can help, the job is dead at once with the server's word.
    @Test func aRefusedMailboxIsPermanent() async throws {
        let sink = try SMTPSink.start()
        defer { sink.stop() }
        try await WorkerTestEnvironment.run { env in
            do {
                _ = try await Self.handler(env, url: sink.url)(Self.payload(to: "reject@example.com"), Self.context)
                Issue.record("a refused mailbox was taken as sent")
            } catch let failure as JobFailure {
                #expect(failure.kind == .permanent && failure.message.contains("550"), "\(failure.message)")
            }
            #expect(sink.messages().isEmpty)
        }
    }

    /// No server there (connection refused): retried; no SMTP_URL at all: a configuration error, permanent.
    @Test func anUnreachableServerIsRetriedAndNoServerIsPermanent() async throws {
        try await WorkerTestEnvironment.run { env in
            do {
                _ = try await Self.handler(env, url: "smtp://127.0.0.1:\(PrivateRedis.freeLoopbackPort())")(
                    Self.payload(to: "ada@example.com"), Self.context)
                Issue.record("an unreachable server was taken as sent")
            } catch let failure as JobFailure {
                #expect(failure.kind == .retryable, "\(failure.message)")
            }
            do {
                _ = try await Self.handler(env, url: nil)(Self.payload(to: "ada@example.com"), Self.context)
                Issue.record("a mail without a server was taken as sent")
            } catch let failure as JobFailure {
                #expect(failure.kind == .permanent && failure.message.contains("SMTP_URL"))
            }
            #expect(throws: MailError.self) { try SMTPMailer(url: "https://mail.example.com") }
        }
    }
}
