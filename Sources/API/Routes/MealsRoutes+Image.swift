import Foundation
import HTTPTypes
import Hummingbird
import Store

/// `GET meals/{id}/image`: the photo an analysed meal was made from, to the meal's owner only, while it is kept
/// (`PHOTO_RETENTION_DAYS`). Another user's meal, no such meal, a meal without a photo and one whose photo retention
/// deleted are all the same 404, so ids cannot be probed.
///
/// A photo never changes, so its SHA-256 is a strong `ETag` and the app may cache it (`private`: it needs the bearer
/// token) until retention deletes it; `If-None-Match` answers 304 from the stored hash without reading the photo.
extension MealsRoutes {
    /// The path the meal's `imageUrl` names (relative to the API's origin).
    static func imagePath(ofMeal id: Int64) -> String { "\(RouteTable.basePath)/meals/\(id)/image" }

    /// The bytes read from Postgres at a time: serving a 10 MiB photo holds one slice (and its hex text), not the photo.
    static let imageSlice = 1 << 20

    func image(_ request: Request, _ context: APIContext) async throws -> Response {
        let principal = try await authenticator.principal(request)
        guard let text = context.parameters.get("id"), let mealID = Int64(text), mealID > 0 else {
            throw APIError.notFound("Meal image")
        }
        let conditions = request.headers[values: .ifNoneMatch]
        // On a replica that has the caller's writes (an analysed meal's photo is the worker's write, marked when the
        // result reached them). Every slice of a large photo is read where the first was.
        let photos = MealPhotos(await reads.reader(for: principal.userID))
        // Unconditional (the usual first load): the hash and the first slice, often the whole photo, in one statement.
        guard
            let image = try await photos.image(
                ofMeal: mealID, userID: principal.userID, prefix: conditions.isEmpty ? Self.imageSlice : 0)
        else { throw APIError.notFound("Meal image") }
        let etag = "\"" + image.sha256.map { String(format: "%02x", $0) }.joined() + "\""
        let kept = image.createdAt.addingTimeInterval(Double(photoRetention.components.seconds)).timeIntervalSinceNow
        var headers: HTTPFields = [.eTag: etag, .cacheControl: "private, max-age=\(max(0, Int(kept)))"]
        if Self.matches(conditions, etag: etag) { return Response(status: .notModified, headers: headers) }
        headers[.contentType] = image.contentType
        let (photoID, userID, size, prefix) = (image.photoID, principal.userID, image.byteSize, image.prefix)
        if prefix.count == size {
            return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: prefix)))
        }
        return Response(
            status: .ok, headers: headers,
            body: ResponseBody(contentLength: size) { writer in
                if !prefix.isEmpty { try await writer.write(ByteBuffer(bytes: prefix)) }
                var offset = prefix.count
                while offset < size {
                    // Deleted since the first read: the connection is closed short of Content-Length, which the client
                    // sees as a failed load (its next try is the 404).
                    guard
                        let slice = try await photos.bytes(
                            ofPhoto: photoID, userID: userID, offset: offset, count: min(Self.imageSlice, size - offset)),
                        !slice.isEmpty
                    else { throw StoreError("photo \(photoID) went away while it was being served") }
                    try await writer.write(ByteBuffer(bytes: slice))
                    offset += slice.count
                }
                try await writer.finish(nil)
            })
    }

    /// Whether `If-None-Match` (every field line, each a list) names `etag` or is `*`, compared weakly as RFC 9110
    /// §13.1.2 says (`W/"…"` matches `"…"`). A percent-encoded line is read decoded: the generated client encodes
    /// header parameters as OpenAPI 3.0's `simple` style does (`%22…%22`, swift-openapi-generator issue 857), and a tag
    /// of ours never holds a `%`.
    static func matches(_ conditions: [String], etag: String) -> Bool {
        conditions.lazy.flatMap { ($0.removingPercentEncoding ?? $0).split(separator: ",") }.contains { candidate in
            var tag = candidate.trimmingCharacters(in: .whitespaces)
            if tag.hasPrefix("W/") { tag.removeFirst(2) }
            return tag == "*" || tag == etag
        }
    }
}
