import Foundation
import Hummingbird
import MultipartKit
import NIOCore

/// A food photo sent to `POST /analyze`: JSON `{imageBase64, metadata}` (seed 001) or `multipart/form-data` with an
/// `image` file part and an optional `metadata` JSON part. At most `maxImageBytes` decoded (413 otherwise, by the
/// declared size before anything is read whole); JPEG, PNG, HEIC or WebP, recognised by their magic bytes. Every 413
/// here states the image's limit, as the document's `ImageTooLarge` does, whichever size gave it away.
struct ImageUpload {
    var bytes: [UInt8]
    var contentType: String
    var metadata: [String: String]

    /// What the photo is, however it was sent (JSON or multipart, any boundary): an `Idempotency-Key` retry of the
    /// same photo matches it.
    var fingerprint: [UInt8] {
        Array(contentType.utf8) + [0]
            + metadata.sorted { $0.key < $1.key }.flatMap { Array($0.key.utf8) + [0] + Array($0.value.utf8) + [0] }
            + bytes
    }

    static let maxImageBytes = 10_485_760
    static let metadataFields: [String: Int] = [
        "deviceModel": 100, "osVersion": 50, "appVersion": 50, "captureTimestamp": 40, "lighting": 50, "cameraFacing": 50,
    ]

    static func read(_ request: Request) async throws -> ImageUpload {
        let contentType = request.headers[.contentType] ?? ""
        if contentType.lowercased().hasPrefix("multipart/form-data") {
            return try await multipart(request, contentType: contentType)
        }
        struct Body: Decodable {
            var imageBase64: String
            var metadata: [String: String]?
        }
        // Base64 takes 4 bytes for every 3; room for the metadata besides.
        let limit = (maxImageBytes + 2) / 3 * 4 + 64 * 1024
        let body = try await JSONBody.decode(
            Body.self, from: request, allowedKeys: ["imageBase64", "metadata"], limit: limit, tooLarge: tooLarge())
        var text = Substring(body.imageBase64)
        if text.hasPrefix("data:"), let comma = text.firstIndex(of: ",") { text = text[text.index(after: comma)...] }
        let decodedSize = text.utf8.count / 4 * 3
        guard decodedSize <= maxImageBytes + 2 else { throw tooLarge() }
        guard let data = Data(base64Encoded: String(text), options: .ignoreUnknownCharacters), !data.isEmpty else {
            throw APIError.validation("imageBase64", "field 'imageBase64' must be a base64-encoded image")
        }
        return try ImageUpload(bytes: Array(data), field: "imageBase64", metadata: body.metadata ?? [:])
    }

    private init(bytes: [UInt8], field: String, metadata: [String: String]) throws {
        guard bytes.count <= Self.maxImageBytes else { throw Self.tooLarge() }
        guard let type = Self.detect(bytes) else {
            throw APIError(
                .badRequest, "UNSUPPORTED_IMAGE", "the image must be a JPEG, PNG, HEIC or WebP file",
                details: ["field": .string(field)])
        }
        for (key, value) in metadata {
            guard let max = Self.metadataFields[key] else {
                throw APIError.validation("metadata.\(key)", "unknown field 'metadata.\(key)'")
            }
            guard value.unicodeScalars.count <= max else {
                throw APIError.validation("metadata.\(key)", "field 'metadata.\(key)' must be at most \(max) characters")
            }
            if key == "captureTimestamp", Timestamp.parse(value) == nil {
                throw APIError.validation("metadata.\(key)", "field 'metadata.\(key)' must be an ISO 8601 date-time")
            }
        }
        self.bytes = bytes
        self.contentType = type
        self.metadata = metadata
    }

    static func tooLarge() -> APIError {
        APIError(
            .contentTooLarge, "PAYLOAD_TOO_LARGE", "the image is larger than \(maxImageBytes >> 20) MiB (\(maxImageBytes) bytes)",
            details: ["limit": .int(maxImageBytes)])
    }

    /// The image type by its first bytes: what the file is, whatever it claims to be.
    static func detect(_ bytes: [UInt8]) -> String? {
        func starts(_ prefix: [UInt8], at offset: Int = 0) -> Bool {
            bytes.count >= offset + prefix.count && Array(bytes[offset..<offset + prefix.count]) == prefix
        }
        if starts([0xFF, 0xD8, 0xFF]) { return "image/jpeg" }
        if starts([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return "image/png" }
        if starts(Array("RIFF".utf8)), starts(Array("WEBP".utf8), at: 8) { return "image/webp" }
        if starts(Array("ftyp".utf8), at: 4), bytes.count >= 12 {
            let brand = String(decoding: bytes[8..<12], as: UTF8.self)
            if ["heic", "heix", "hevc", "hevx", "heim", "heis", "mif1", "msf1"].contains(brand) { return "image/heic" }
        }
        return nil
    }

    private static func multipart(_ request: Request, contentType: String) async throws -> ImageUpload {
        guard
            let boundary = contentType.split(separator: ";").lazy.map({ $0.trimmingCharacters(in: .whitespaces) })
                .first(where: { $0.lowercased().hasPrefix("boundary=") })
                .map({ String($0.dropFirst("boundary=".count)).trimmingCharacters(in: CharacterSet(charactersIn: "\"")) }),
            !boundary.isEmpty
        else { throw APIError(.badRequest, "VALIDATION_ERROR", "multipart/form-data needs a boundary") }
        let buffer = try await JSONBody.collect(request, limit: maxImageBytes + 64 * 1024, tooLarge: tooLarge())
        var parts: [(headers: [String: String], body: [UInt8])] = []
        var headers: [String: String] = [:]
        var body: [UInt8] = []
        let parser = MultipartParser(boundary: boundary)
        parser.onHeader = { name, value in headers[name.lowercased()] = value }
        parser.onBody = { chunk in body.append(contentsOf: chunk.readableBytesView) }
        parser.onPartComplete = {
            parts.append((headers, body))
            headers = [:]
            body = []
        }
        do {
            try parser.execute(buffer)
        } catch {
            throw APIError(.badRequest, "VALIDATION_ERROR", "the multipart body could not be read")
        }
        func name(_ part: (headers: [String: String], body: [UInt8])) -> String? {
            guard let disposition = part.headers["content-disposition"] else { return nil }
            for item in disposition.split(separator: ";") {
                let pair = item.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
                if pair.count == 2, pair[0] == "name" { return pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\"")) }
            }
            return nil
        }
        if let unknown = parts.lazy.compactMap({ name($0) ?? "" }).first(where: { $0 != "image" && $0 != "metadata" }) {
            throw APIError.validation(unknown, "unknown part '\(unknown)': the body takes 'image' and 'metadata'")
        }
        guard let image = parts.first(where: { name($0) == "image" }) else {
            throw APIError.validation("image", "the multipart body needs an 'image' file part")
        }
        var metadata: [String: String] = [:]
        if let part = parts.first(where: { name($0) == "metadata" }) {
            guard let decoded = try? JSONDecoder().decode([String: String].self, from: Data(part.body)) else {
                throw APIError.validation("metadata", "part 'metadata' must be a JSON object of strings")
            }
            metadata = decoded
        }
        return try ImageUpload(bytes: image.body, field: "image", metadata: metadata)
    }
}
