/// Apple's DER encoding of entitlements (the `0xfade7172` blob), decoded into ``PlistValue``s.
///
/// The layout: `[APPLICATION 16] { INTEGER version, value }` where a dictionary is
/// `[CONTEXT 16] { SEQUENCE { UTF8String key, value } … }`, an array is a `SEQUENCE`, and scalars
/// are `UTF8String`, `BOOLEAN` and `INTEGER`. A bare `SET` of key/value sequences is accepted at
/// the top level too. Strict DER: definite lengths only, depth-limited, every length checked.
public enum DEREntitlements {
    /// The deepest nesting read.
    static let maxDepth = 32

    /// Decodes DER entitlements into a dictionary.
    /// - Throws: ``AppBundleError`` `signature-malformed` with what was wrong.
    public static func decode(_ bytes: [UInt8]) throws(AppBundleError) -> [String: PlistValue] {
        var reader = DERReader(bytes: bytes[...])
        guard let top = try reader.next() else { throw malformed("empty") }
        guard reader.atEnd else { throw malformed("bytes follow the top-level element") }
        switch top.tag {
        case 0x70:
            var inner = DERReader(bytes: top.value)
            guard let version = try inner.next(), version.tag == 0x02 else { throw malformed("no version number") }
            guard let value = try inner.next(), inner.atEnd else { throw malformed("the wrapper holds no single value") }
            guard case .dictionary(let dictionary) = try decodeValue(value, depth: 1) else {
                throw malformed("the top-level value is not a dictionary")
            }
            return dictionary
        case 0x31:
            return try decodeDictionary(top.value, depth: 1)
        default:
            throw malformed("unexpected top-level tag 0x\(String(top.tag, radix: 16))")
        }
    }

    private static func malformed(_ detail: String) -> AppBundleError {
        AppBundleError("signature-malformed", "DER entitlements: \(detail)")
    }

    private static func decodeValue(_ element: DERReader.Element, depth: Int) throws(AppBundleError) -> PlistValue {
        guard depth <= maxDepth else { throw malformed("nested deeper than \(maxDepth)") }
        switch element.tag {
        case 0x0C:
            guard let string = String(validating: element.value, as: UTF8.self) else { throw malformed("a string is not UTF-8") }
            return .string(string)
        case 0x01:
            guard element.value.count == 1, let byte = element.value.first else { throw malformed("a BOOLEAN is not one byte") }
            return .bool(byte != 0)
        case 0x02:
            guard (1...8).contains(element.value.count), let first = element.value.first else {
                throw malformed("an INTEGER has \(element.value.count) bytes")
            }
            var value: Int64 = first & 0x80 != 0 ? -1 : 0
            for byte in element.value { value = value << 8 | Int64(byte) }
            return .integer(value)
        case 0x30:
            var reader = DERReader(bytes: element.value)
            var values: [PlistValue] = []
            while let child = try reader.next() { values.append(try decodeValue(child, depth: depth + 1)) }
            return .array(values)
        case 0xB0:
            return .dictionary(try decodeDictionary(element.value, depth: depth + 1))
        default:
            throw malformed("unsupported tag 0x\(String(element.tag, radix: 16))")
        }
    }

    private static func decodeDictionary(_ bytes: ArraySlice<UInt8>, depth: Int) throws(AppBundleError) -> [String: PlistValue] {
        guard depth <= maxDepth else { throw malformed("nested deeper than \(maxDepth)") }
        var reader = DERReader(bytes: bytes)
        var dictionary: [String: PlistValue] = [:]
        while let pair = try reader.next() {
            guard pair.tag == 0x30 else { throw malformed("a dictionary entry is not a SEQUENCE") }
            var fields = DERReader(bytes: pair.value)
            guard let key = try fields.next(), key.tag == 0x0C,
                  let keyString = String(validating: key.value, as: UTF8.self) else {
                throw malformed("a dictionary key is not a UTF8String")
            }
            guard let value = try fields.next(), fields.atEnd else { throw malformed("'\(keyString)' has no single value") }
            guard dictionary[keyString] == nil else { throw malformed("the key '\(keyString)' appears twice") }
            dictionary[keyString] = try decodeValue(value, depth: depth + 1)
        }
        return dictionary
    }
}

/// Reads definite-length DER elements (single-byte tags) from a slice.
struct DERReader {
    struct Element {
        var tag: UInt8
        var value: ArraySlice<UInt8>
    }

    private var bytes: ArraySlice<UInt8>

    init(bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
    }

    var atEnd: Bool { bytes.isEmpty }

    /// The next element, `nil` at the end.
    mutating func next() throws(AppBundleError) -> Element? {
        guard let tag = bytes.first else { return nil }
        var index = bytes.startIndex + 1
        guard tag & 0x1F != 0x1F else { throw AppBundleError("signature-malformed", "DER entitlements: multi-byte tag") }
        guard index < bytes.endIndex else { throw AppBundleError("signature-malformed", "DER entitlements: element cut short") }
        let first = bytes[index]
        index += 1
        var length = 0
        if first & 0x80 == 0 {
            length = Int(first)
        } else {
            let count = Int(first & 0x7F)
            guard count >= 1, count <= 4, count <= bytes.endIndex - index else {
                throw AppBundleError("signature-malformed", "DER entitlements: bad length encoding")
            }
            for byte in bytes[index..<(index + count)] { length = length << 8 | Int(byte) }
            index += count
        }
        guard length <= bytes.endIndex - index else {
            throw AppBundleError("signature-malformed", "DER entitlements: an element claims \(length) bytes, past the end")
        }
        let element = Element(tag: tag, value: bytes[index..<(index + length)])
        bytes = bytes[(index + length)...]
        return element
    }
}
