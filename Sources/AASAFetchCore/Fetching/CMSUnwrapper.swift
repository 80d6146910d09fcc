/// Extracts the signed content of a CMS `SignedData` message (an iOS 8 era signed association
/// file served as `application/pkcs7-mime`). The signature is not verified: Apple deprecated
/// signing, and the content is what devices read.
///
/// A small BER reader: definite and indefinite lengths, constructed OCTET STRINGs; every length is
/// bounds-checked, so hostile input gives `nil`, never a crash.
public enum CMSUnwrapper {
    /// What an association file's bytes are, as Apple's downloader reads a signed one.
    public enum Body: Sendable, Hashable {
        /// Not signed: the bytes as they are.
        case plain
        /// A CMS `SignedData` with its content: the JSON inside.
        case signed(content: [UInt8])
        /// Served as signed (`application/pkcs7-mime`) or starting as DER does (a SEQUENCE, which
        /// JSON cannot start with), but no `SignedData` with content: detached, cut or corrupt.
        case unusable
    }

    /// How to read `bytes` served with `mediaType` (`nil`: a file on disk). One reading for
    /// `fetch`, `lint`, `diff` and `match --aasa`.
    public static func body(_ bytes: [UInt8], mediaType: String? = nil) -> Body {
        guard signedMediaTypes.contains(mediaType ?? "") || bytes.first == 0x30 else { return .plain }
        if let content = content(of: bytes) { return .signed(content: content) }
        return .unusable
    }

    /// The media types of a CMS-signed body (lower-case, without parameters).
    public static let signedMediaTypes: Set<String> = ["application/pkcs7-mime", "application/pkcs7-signature"]

    /// The `signed-file` warning of a signed file of `size` bytes (`nil`: not known) with `content` bytes inside.
    public static func signedFinding(size: Int?, content: Int, location: String?) -> Finding {
        .warning("signed-file",
                 "the file is CMS-signed (\(size.map { "\($0) bytes, \(content) of content" } ?? "\(content) bytes of content")); Apple deprecated signed files and will stop reading them",
                 location: location, fix: "serve the plain JSON file")
    }

    /// Why an ``Body/unusable`` body is not read.
    public static let unusableReason = "the body is served or shaped as a CMS-signed file, but it holds no signed content to read (a detached signature, or a file cut short or corrupt)"

    private static let signedDataOID: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x02]

    /// The encapsulated content, or `nil` when the bytes are not a CMS `SignedData` with content.
    public static func content(of bytes: [UInt8]) -> [UInt8]? {
        var reader = BERReader(bytes: bytes[...])
        guard let contentInfo = reader.next(), contentInfo.tag == 0x30 else { return nil }
        var info = BERReader(bytes: contentInfo.value)
        guard let oid = info.next(), oid.tag == 0x06, Array(oid.value) == signedDataOID,
              let explicit = info.next(), explicit.tag == 0xA0 else { return nil }
        var wrapper = BERReader(bytes: explicit.value)
        guard let signedData = wrapper.next(), signedData.tag == 0x30 else { return nil }
        var fields = BERReader(bytes: signedData.value)
        guard let version = fields.next(), version.tag == 0x02,
              let digests = fields.next(), digests.tag == 0x31,
              let encap = fields.next(), encap.tag == 0x30 else { return nil }
        var encapFields = BERReader(bytes: encap.value)
        guard let type = encapFields.next(), type.tag == 0x06,
              let eContent = encapFields.next(), eContent.tag == 0xA0 else { return nil }
        var octets = BERReader(bytes: eContent.value)
        guard let string = octets.next() else { return nil }
        return flattenOctetString(string, depth: 0)
    }

    private static func flattenOctetString(_ element: BERReader.Element, depth: Int) -> [UInt8]? {
        if element.tag == 0x04 { return Array(element.value) }
        guard element.tag == 0x24, depth < 8 else { return nil }
        var reader = BERReader(bytes: element.value)
        var output: [UInt8] = []
        while let segment = reader.next() {
            guard let part = flattenOctetString(segment, depth: depth + 1) else { return nil }
            output += part
        }
        return reader.failed ? nil : output
    }
}

/// Reads BER TLV elements from a byte slice.
struct BERReader {
    struct Element {
        var tag: UInt8
        var value: ArraySlice<UInt8>
    }

    private(set) var bytes: ArraySlice<UInt8>
    private(set) var failed = false
    /// How many indefinite-length parents enclose this reader (bounded, so hostile nesting cannot
    /// exhaust the stack).
    private let depth: Int

    /// The deepest nesting of indefinite-length elements read.
    static let maxIndefiniteDepth = 32

    init(bytes: ArraySlice<UInt8>) {
        self.init(bytes: bytes, depth: 0)
    }

    private init(bytes: ArraySlice<UInt8>, depth: Int) {
        self.bytes = bytes
        self.depth = depth
    }

    /// The next element; `nil` at the end, at an end-of-contents marker, or on malformed input.
    mutating func next() -> Element? {
        guard !failed, let tag = bytes.first else { return nil }
        var index = bytes.startIndex + 1
        if tag == 0x00 {
            // End-of-contents of an indefinite-length parent.
            return nil
        }
        guard tag & 0x1F != 0x1F, index < bytes.endIndex else { return fail() }
        let first = bytes[index]
        index += 1
        if first == 0x80 {
            // Indefinite length: the value runs to the matching end-of-contents (00 00).
            guard tag & 0x20 != 0, depth < Self.maxIndefiniteDepth else { return fail() }
            var inner = BERReader(bytes: bytes[index...], depth: depth + 1)
            while inner.next() != nil {}
            guard !inner.failed, inner.bytes.count >= 2,
                  inner.bytes[inner.bytes.startIndex] == 0, inner.bytes[inner.bytes.startIndex + 1] == 0 else { return fail() }
            let end = inner.bytes.startIndex
            let element = Element(tag: tag, value: bytes[index..<end])
            bytes = bytes[(end + 2)...]
            return element
        }
        var length = 0
        if first & 0x80 == 0 {
            length = Int(first)
        } else {
            let count = Int(first & 0x7F)
            guard count >= 1, count <= 4, index + count <= bytes.endIndex else { return fail() }
            for byte in bytes[index..<(index + count)] { length = length << 8 | Int(byte) }
            index += count
        }
        guard length >= 0, length <= bytes.endIndex - index else { return fail() }
        let element = Element(tag: tag, value: bytes[index..<(index + length)])
        bytes = bytes[(index + length)...]
        return element
    }

    private mutating func fail() -> Element? {
        failed = true
        return nil
    }
}
