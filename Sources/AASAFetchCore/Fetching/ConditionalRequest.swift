import CurlTransport

/// What a refresh knows of a host's approved file, to ask for it conditionally: the validators
/// go out as `If-None-Match` and `If-Modified-Since` to the URL that served the file; a
/// `304 Not Modified` answer is then judged on the stored body and headers (the result is `ok`
/// with HTTP status 304).
public struct ConditionalRequest: Sendable, Hashable {
    /// The validators of the stored approved response.
    public var validators: CacheValidators
    /// The stored approved body.
    public var body: [UInt8]
    /// The headers of the stored approved response (`Content-Type`, `Cache-Control`, …).
    public var headers: [HTTPHeader]
    /// The URL that served the approved response. Validators describe one resource: another URL
    /// (`.well-known` after a file served at the legacy root path, the legacy path after a 404,
    /// another `--cdn-base`) is asked without them, so its 304 cannot stand for this file.
    public var url: String

    /// Creates a conditional request.
    public init(validators: CacheValidators, body: [UInt8], headers: [HTTPHeader], url: String) {
        self.validators = validators
        self.body = body
        self.headers = headers
        self.url = url
    }

    /// This request when `url` is the one that served the file and the file is within `maxSize`,
    /// else `nil` (an unconditional request). A file approved under a larger `--max-size` is
    /// downloaded again, so a 304 never confirms what a download would refuse as `too-large`.
    func applying(to url: String, maxSize: Int) -> ConditionalRequest? {
        url == self.url && body.count <= maxSize ? self : nil
    }

    /// The request headers it adds.
    public var requestHeaders: [String] {
        var headers: [String] = []
        if let etag = validators.etag { headers.append("If-None-Match: \(etag)") }
        if let lastModified = validators.lastModified { headers.append("If-Modified-Since: \(lastModified)") }
        return headers
    }

    /// The response a 304 stands for: the stored body, with the stored headers updated by the
    /// 304's own (as HTTP caches do).
    func response(for notModified: TransferResponse) -> TransferResponse {
        var merged = headers.map { (name: $0.name, value: $0.value) }
        for header in notModified.headers {
            if let index = merged.firstIndex(where: { $0.name.equalsIgnoringASCIICase(header.name) }) {
                merged[index] = header
            } else {
                merged.append(header)
            }
        }
        var response = notModified
        response.status = 200
        response.headers = merged
        response.body = body
        return response
    }
}
