import CurlTransport
import Foundation

/// The headers of an Apple CDN answer, decoded (as Apple's CDN sends them): the failure reason split
/// into its `SWCERR…` code, its text and the origin's HTTP status; the JSON failure details; the
/// origin URL the CDN fetched; whether it tells the device to try directly; and the cache headers.
///
/// JSON shape (every key present, `null` when absent, as every `--json` document writes it):
/// `{"httpStatus": 404, "httpVersion": "2", "failureReason": "SWCERR00101 Bad HTTP Response: 404 Not Found",
///   "swcError": "SWCERR00101", "failureText": "Bad HTTP Response: 404 Not Found", "originStatus": 404,
///   "failureDetails": {"status": "404 Not Found"}, "from": "https://example.com/.well-known/apple-app-site-association",
///   "tryDirect": false, "originFormat": null, "age": 120, "cacheControl": "max-age=3600,public", "maxAge": 3600}`.
public struct CDNHeaders: Sendable, Hashable, Codable {
    /// The CDN's own HTTP status (not the origin's).
    public var httpStatus: Int
    /// The negotiated HTTP version (`2` when the CDN multiplexes).
    public var httpVersion: String
    /// `Apple-Failure-Reason` as sent.
    public var failureReason: String?
    /// The `SWCERR…` code at the start of the failure reason.
    public var swcError: String?
    /// The failure reason after the code, e.g. `Bad HTTP Response: 403 Forbidden` or `Timeout`.
    public var failureText: String?
    /// The origin's HTTP status the CDN saw, from the details' `status` or the reason text.
    public var originStatus: Int?
    /// `Apple-Failure-Details` decoded (a JSON object; values as text), e.g. `{"cause": "context deadline exceeded"}`.
    public var failureDetails: [String: String]?
    /// `Apple-Failure-Details` as sent, when it is not a JSON object.
    public var failureDetailsRaw: String?
    /// `Apple-From`: the origin URL the CDN fetched.
    public var from: String?
    /// `Apple-Try-Direct`: whether the CDN tells the device it may fetch from the origin itself.
    public var tryDirect: Bool?
    /// `Apple-Origin-Format` (`json` on success).
    public var originFormat: String?
    /// `Age`: seconds the CDN has held this answer.
    public var age: Int?
    /// `Cache-Control` as sent.
    public var cacheControl: String?
    /// The `max-age` of `Cache-Control`.
    public var maxAge: Int?

    /// Creates an empty description for a status.
    public init(httpStatus: Int, httpVersion: String = "") {
        self.httpStatus = httpStatus
        self.httpVersion = httpVersion
    }

    /// Decodes the headers of a CDN response.
    public init(response: TransferResponse) {
        self.init(httpStatus: response.status, httpVersion: response.httpVersion)
        if let reason = response.header("Apple-Failure-Reason")?.trimmingCharacters(in: .whitespaces), !reason.isEmpty {
            failureReason = reason
            let parts = reason.split(separator: " ", maxSplits: 1)
            if let first = parts.first, first.hasPrefix("SWCERR") {
                swcError = String(first)
                failureText = parts.count > 1 ? String(parts[1]) : nil
            } else {
                failureText = reason
            }
        }
        if let details = response.header("Apple-Failure-Details")?.trimmingCharacters(in: .whitespaces), !details.isEmpty {
            if let object = (try? JSONSerialization.jsonObject(with: Data(details.utf8), options: [.fragmentsAllowed])) as? [String: Any] {
                var decoded: [String: String] = [:]
                for (key, value) in object {
                    // A value that is not a string as compact JSON text (`true`, `null`, `{"a":[1,2]}`),
                    // not Swift's description of it.
                    decoded[key] = (value as? String) ?? Self.jsonText(value)
                }
                failureDetails = decoded
            } else {
                failureDetailsRaw = details
            }
        }
        originStatus = Self.leadingStatus(failureDetails?["status"]) ?? Self.statusInReason(failureText)
        from = response.header("Apple-From")
        if let direct = response.header("Apple-Try-Direct")?.trimmingCharacters(in: .whitespaces).lowercased() {
            tryDirect = direct == "true" ? true : (direct == "false" ? false : nil)
        }
        originFormat = response.header("Apple-Origin-Format")
        age = response.header("Age").flatMap { Self.deltaSeconds($0.trimmingCharacters(in: .whitespaces)) }
        cacheControl = response.header("Cache-Control")
        maxAge = cacheControl.flatMap(Self.maxAge(in:))
    }

    /// The device log's wording: reason, ` -- `, details (as `swcd` logs a CDN refusal).
    public var logLine: String? {
        guard let failureReason else { return nil }
        let details = failureDetails.map { dictionary in
            "{" + dictionary.keys.sorted().map { "\(Self.jsonText($0)):\(Self.jsonText(dictionary[$0] ?? ""))" }.joined(separator: ",") + "}"
        } ?? failureDetailsRaw
        return details.map { "\(failureReason) -- \($0)" } ?? failureReason
    }

    /// A JSON value as compact JSON text (a string quoted and escaped).
    static func jsonText(_ value: Any) -> String {
        if value is NSNull { return "null" }
        guard let data = try? JSONSerialization.data(withJSONObject: value, options: [.fragmentsAllowed, .sortedKeys, .withoutEscapingSlashes]) else {
            return "\(value)"
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// `Age` and `Cache-Control` in words, e.g. `Age 5000 s, Cache-Control max-age=21600,public`.
    public var cacheSummary: String {
        var parts: [String] = []
        if let age { parts.append("Age \(age) s") }
        if let cacheControl { parts.append("Cache-Control \(cacheControl)") }
        return parts.isEmpty ? "no Age or Cache-Control header" : parts.joined(separator: ", ")
    }

    private static func leadingStatus(_ text: String?) -> Int? {
        guard let text else { return nil }
        let digits = text.trimmingCharacters(in: .whitespaces).prefix { $0.isNumber }
        guard digits.count == 3 else { return nil }
        return Int(digits)
    }

    private static func statusInReason(_ text: String?) -> Int? {
        guard let text, let range = text.range(of: "Response:") else { return nil }
        return leadingStatus(String(text[range.upperBound...]))
    }

    /// The first `max-age` (or `s-maxage`) directive's value; `nil` when that one is not a
    /// delta-seconds value.
    private static func maxAge(in cacheControl: String) -> Int? {
        for directive in cacheControl.split(separator: ",") {
            let parts = directive.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            if parts.count == 2, parts[0] == "max-age" || parts[0] == "s-maxage" {
                return deltaSeconds(parts[1])
            }
        }
        return nil
    }

    /// RFC 9111's delta-seconds: digits only (`-5`, `+5` and `1.5` are not), a value too large
    /// for an integer being the largest (2^31 s, §1.2.2).
    static func deltaSeconds(_ text: String) -> Int? {
        guard !text.isEmpty, text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else { return nil }
        return min(Int(text) ?? Int(Int32.max), Int(Int32.max))
    }
}
