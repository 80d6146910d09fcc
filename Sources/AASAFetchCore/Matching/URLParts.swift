import IDNA

/// A URL split into the parts universal-link patterns see, as `NSURLComponents` gives them:
/// path, query and fragment percent-encoded (characters a URL may not hold, such as spaces and
/// non-ASCII text, are percent-encoded as UTF-8 first, as `URL(string:)` does), the path empty
/// for `https://example.com`, the query and fragment `nil` when absent.
public struct URLParts: Sendable, Hashable {
    /// A host as the matcher compares a URL's (lower case, no trailing dot, Punycode), for a host
    /// given on its own (`match --host bücher.example`).
    public static func normalisedHost(_ host: String) -> String {
        let bytes = Array(host.utf8)
        return bytes.withUnsafeBufferPointer { URLSplitter.normalisedHost($0) }
    }

    /// The scheme, lower-cased.
    public var scheme: String
    /// The host, lower-cased, without brackets' contents changed; `nil` without an authority.
    public var host: String?
    /// The port, when written.
    public var port: Int?
    /// The percent-encoded path (`""` for `https://example.com`).
    public var path: String
    /// The percent-encoded query without `?`, or `nil` when there is no `?`.
    public var query: String?
    /// The percent-encoded fragment without `#`, or `nil` when there is no `#`.
    public var fragment: String?

    /// Splits a URL string; `nil` when it has no scheme or an unusable authority.
    public init?(_ string: String) {
        var bytes = Array(string.utf8)
        if let encoded = bytes.withUnsafeBufferPointer({ URLSplitter.encodingInvalidCharacters($0) }) { bytes = encoded }
        guard let parts: URLParts = bytes.withUnsafeBufferPointer({ buffer in
            guard let ranges = URLSplitter.split(buffer) else { return nil }
            func text(_ range: Range<Int>?) -> String? {
                range.map { String(decoding: UnsafeBufferPointer(rebasing: buffer[$0]), as: UTF8.self) }
            }
            return URLParts(
                scheme: (text(ranges.scheme) ?? "").lowercased(),
                host: ranges.host.map { URLSplitter.normalisedHost(UnsafeBufferPointer(rebasing: buffer[$0])) },
                port: text(ranges.port).flatMap { Int($0) },
                path: text(ranges.path) ?? "",
                query: text(ranges.query),
                fragment: text(ranges.fragment)
            )
        }) else { return nil }
        self = parts
    }

    /// Creates parts directly.
    public init(scheme: String, host: String?, port: Int? = nil, path: String, query: String? = nil, fragment: String? = nil) {
        self.scheme = scheme
        self.host = host
        self.port = port
        self.path = path
        self.query = query
        self.fragment = fragment
    }

    /// The query items as `NSURLQueryItem` gives them: split on `&`, the name up to the first
    /// `=`, names and values percent-decoded (`+` stays `+`); an item without `=` has an empty
    /// value. `nil` without a query, empty for an empty query.
    public var queryItems: [URLQueryItemParts]? {
        guard let query else { return nil }
        if query.isEmpty { return [] }
        return query.split(separator: "&", omittingEmptySubsequences: false).map { piece in
            let bytes = Array(piece.utf8)
            let equals = bytes.firstIndex(of: 0x3D)
            let name = Array(bytes[..<(equals ?? bytes.count)])
            let value = equals.map { Array(bytes[($0 + 1)...]) }
            func decoded(_ raw: [UInt8]) -> String {
                raw.withUnsafeBufferPointer { buffer in
                    String(decoding: UTF8Text.percentDecoded(buffer) ?? raw, as: UTF8.self)
                }
            }
            return URLQueryItemParts(
                name: decoded(name), value: value.map(decoded),
                encodedName: String(decoding: name, as: UTF8.self),
                encodedValue: value.map { String(decoding: $0, as: UTF8.self) }
            )
        }
    }
}

/// One query item, decoded (as `NSURLQueryItem`) and as written.
public struct URLQueryItemParts: Sendable, Hashable {
    /// The percent-decoded name.
    public var name: String
    /// The percent-decoded value; `nil` when the item has no `=`.
    public var value: String?
    /// The name as written.
    public var encodedName: String
    /// The value as written.
    public var encodedValue: String?
}

/// The byte-level URL splitter behind ``URLParts`` and the matcher.
enum URLSplitter {
    struct Ranges {
        var scheme: Range<Int>
        var host: Range<Int>?
        var port: Range<Int>?
        var path: Range<Int>
        var query: Range<Int>?
        var fragment: Range<Int>?
    }

    /// Bytes a URL's path, query or fragment may hold as they are (RFC 3986 `pchar`, `/`, `?`,
    /// plus `%` which is checked separately).
    static let allowed: ByteSet = {
        var set = ByteSet(bytes: Array(0x41...0x5A) + Array(0x61...0x7A) + Array(0x30...0x39))
        for byte in "-._~!$&'()*+,;=:@/?%".utf8 { set.insert(byte) }
        return set
    }()

    /// Splits `scheme:[//authority]path[?query][#fragment]`.
    static func split(_ bytes: UnsafeBufferPointer<UInt8>) -> Ranges? {
        let count = bytes.count
        var index = 0
        // Scheme.
        guard count > 0, isAlpha(bytes[0]) else { return nil }
        while index < count, isSchemeByte(bytes[index]) { index += 1 }
        guard index < count, bytes[index] == 0x3A else { return nil }
        let scheme = 0..<index
        index += 1
        var host: Range<Int>?
        var port: Range<Int>?
        if index + 1 < count, bytes[index] == 0x2F, bytes[index + 1] == 0x2F {
            index += 2
            let authorityStart = index
            while index < count, bytes[index] != 0x2F, bytes[index] != 0x3F, bytes[index] != 0x23 { index += 1 }
            var hostStart = authorityStart
            for position in authorityStart..<index where bytes[position] == 0x40 { hostStart = position + 1 }
            var hostEnd = index
            if hostStart < index, bytes[hostStart] == 0x5B {
                guard let close = (hostStart..<index).first(where: { bytes[$0] == 0x5D }) else { return nil }
                hostEnd = close + 1
                if hostEnd < index {
                    guard bytes[hostEnd] == 0x3A else { return nil }
                    port = (hostEnd + 1)..<index
                }
            } else if let colon = (hostStart..<index).last(where: { bytes[$0] == 0x3A }) {
                hostEnd = colon
                port = (colon + 1)..<index
            }
            if let port {
                for position in port where !(bytes[position] >= 0x30 && bytes[position] <= 0x39) { return nil }
            }
            host = hostStart..<hostEnd
        }
        let pathStart = index
        while index < count, bytes[index] != 0x3F, bytes[index] != 0x23 { index += 1 }
        let path = pathStart..<index
        var query: Range<Int>?
        if index < count, bytes[index] == 0x3F {
            let start = index + 1
            index = start
            while index < count, bytes[index] != 0x23 { index += 1 }
            query = start..<index
        }
        var fragment: Range<Int>?
        if index < count, bytes[index] == 0x23 {
            fragment = (index + 1)..<count
        }
        return Ranges(scheme: scheme, host: host, port: port, path: path, query: query, fragment: fragment)
    }

    /// Percent-encodes what a URL may not hold after its authority (as `URL(string:)` does on
    /// current systems): non-ASCII as UTF-8, spaces, controls, `"<>\^`{|}[]`, a `%` not starting
    /// an escape, and a second `#`. Returns `nil` when nothing needs encoding.
    static func encodingInvalidCharacters(_ bytes: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        let start = afterAuthority(bytes)
        var needed = false
        var seenHash = false
        for index in start..<bytes.count where needsEncoding(bytes, at: index, seenHash: &seenHash) {
            needed = true
            break
        }
        guard needed else { return nil }
        var out = Array(bytes[0..<start])
        out.reserveCapacity(bytes.count + 16)
        seenHash = false
        let hex: [UInt8] = Array("0123456789ABCDEF".utf8)
        for index in start..<bytes.count {
            let byte = bytes[index]
            if needsEncoding(bytes, at: index, seenHash: &seenHash) {
                out.append(0x25)
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 15)])
            } else {
                out.append(byte)
            }
        }
        return out
    }

    @inline(__always)
    private static func needsEncoding(_ bytes: UnsafeBufferPointer<UInt8>, at index: Int, seenHash: inout Bool) -> Bool {
        let byte = bytes[index]
        if byte == 0x23 {
            if seenHash { return true }
            seenHash = true
            return false
        }
        if byte == 0x25 {
            return !(index + 2 < bytes.count && UTF8Text.isHex(bytes[index + 1]) && UTF8Text.isHex(bytes[index + 2]))
        }
        return !allowed.contains(byte)
    }

    /// The index where the path starts (after `scheme://authority`), or 0 when unparsable.
    private static func afterAuthority(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
        var index = 0
        while index < bytes.count, isSchemeByte(bytes[index]) { index += 1 }
        guard index < bytes.count, bytes[index] == 0x3A else { return 0 }
        index += 1
        if index + 1 < bytes.count, bytes[index] == 0x2F, bytes[index + 1] == 0x2F {
            index += 2
            while index < bytes.count, bytes[index] != 0x2F, bytes[index] != 0x3F, bytes[index] != 0x23 { index += 1 }
        }
        return index
    }

    @inline(__always)
    static func isAlpha(_ byte: UInt8) -> Bool {
        (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
    }

    @inline(__always)
    static func isSchemeByte(_ byte: UInt8) -> Bool {
        isAlpha(byte) || (byte >= 0x30 && byte <= 0x39) || byte == 0x2B || byte == 0x2D || byte == 0x2E
    }

    /// Whether the scheme is `http` or `https` (any case).
    static func isHTTP(_ scheme: UnsafeBufferPointer<UInt8>) -> Bool {
        guard scheme.count == 4 || scheme.count == 5 else { return false }
        guard scheme[0] | 0x20 == 0x68, scheme[1] | 0x20 == 0x74, scheme[2] | 0x20 == 0x74, scheme[3] | 0x20 == 0x70 else {
            return false
        }
        return scheme.count == 4 || scheme[4] | 0x20 == 0x73
    }

    /// A host as the matcher compares it: lower-cased, without a trailing dot, internationalised
    /// names converted to their ASCII (Punycode) form.
    static func normalisedHost(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        // Fast path: already lower-case ASCII without escapes or a trailing dot.
        if !bytes.isEmpty, bytes[bytes.count - 1] != 0x2E,
           !bytes.contains(where: { $0 >= 0x80 || $0 == 0x25 || ($0 >= 0x41 && $0 <= 0x5A) }) {
            return String(decoding: bytes, as: UTF8.self)
        }
        var host = String(decoding: bytes, as: UTF8.self)
        if let decoded = UTF8Text.percentDecoded(bytes), decoded != Array(bytes) {
            host = String(decoding: decoded, as: UTF8.self)
        }
        if host.hasSuffix(".") { host.removeLast() }
        if !host.utf8.allSatisfy({ $0 < 0x80 }), let ascii = try? IDNA.toASCII(host) { host = ascii }
        return host.lowercased()
    }
}
