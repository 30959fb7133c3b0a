import OpenAPIRuntime

extension Operations.GetMealImage.Output.Ok.Body {
    /// The photo's bytes, whichever of the accepted image types it was uploaded as (`Content-Type` says which).
    public var image: HTTPBody {
        switch self {
        case .jpeg(let body), .png(let body), .imageHeic(let body), .imageWebp(let body): body
        }
    }
}
