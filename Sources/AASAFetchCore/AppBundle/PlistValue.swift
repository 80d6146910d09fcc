import Foundation

/// A property-list value, as entitlements hold them (from an XML plist or Apple's DER encoding).
/// Comparable across both encodings and encodable as JSON (dates as ISO 8601, data as base64).
public indirect enum PlistValue: Sendable, Hashable, Encodable, CustomStringConvertible {
    case string(String)
    case bool(Bool)
    case integer(Int64)
    /// An unsigned integer past `Int64.max` (every other integer is ``integer(_:)``).
    case unsigned(UInt64)
    case real(Double)
    case date(Date)
    case data([UInt8])
    case array([PlistValue])
    case dictionary([String: PlistValue])

    /// Equal values: as stored, except that every NaN `<real>` equals every other (the same
    /// entitlements signed into two slices of a universal binary compare equal even when a value
    /// is NaN, where IEEE comparison would call them different).
    public static func == (lhs: PlistValue, rhs: PlistValue) -> Bool {
        switch (lhs, rhs) {
        case let (.string(a), .string(b)): a == b
        case let (.bool(a), .bool(b)): a == b
        case let (.integer(a), .integer(b)): a == b
        case let (.unsigned(a), .unsigned(b)): a == b
        case let (.real(a), .real(b)): a == b || (a.isNaN && b.isNaN)
        case let (.date(a), .date(b)): a == b || (a.timeIntervalSinceReferenceDate.isNaN && b.timeIntervalSinceReferenceDate.isNaN)
        case let (.data(a), .data(b)): a == b
        case let (.array(a), .array(b)): a == b
        case let (.dictionary(a), .dictionary(b)): a == b
        default: false
        }
    }

    /// Hashes consistently with ``==(_:_:)`` (one hash for every NaN).
    public func hash(into hasher: inout Hasher) {
        switch self {
        case .string(let value): hasher.combine(0); hasher.combine(value)
        case .bool(let value): hasher.combine(1); hasher.combine(value)
        case .integer(let value): hasher.combine(2); hasher.combine(value)
        case .unsigned(let value): hasher.combine(3); hasher.combine(value)
        case .real(let value): hasher.combine(4); hasher.combine(value.isNaN ? Double.infinity : value)
        case .date(let value):
            hasher.combine(5)
            let seconds = value.timeIntervalSinceReferenceDate
            hasher.combine(seconds.isNaN ? Double.infinity : seconds)
        case .data(let value): hasher.combine(6); hasher.combine(value)
        case .array(let value): hasher.combine(7); hasher.combine(value)
        case .dictionary(let value): hasher.combine(8); hasher.combine(value)
        }
    }

    /// Converts what `PropertyListSerialization` returns; `nil` for anything else (or for a graph
    /// over ``PropertyListReader/Limits/standard``).
    public init?(foundation value: Any) {
        var budget = PropertyListReader.Budget(limits: .standard)
        guard let converted = try? budget.convert(value, depth: 1) else { return nil }
        self = converted
    }

    /// Whether bytes start like a property list: `bplist`, or (after white space and a UTF-8 byte
    /// order mark) `<?xml`, `<!DOCTYPE plist` or `<plist`.
    static func looksLikePropertyList(_ bytes: [UInt8]) -> Bool {
        if bytes.starts(with: Array("bplist".utf8)) { return true }
        // UTF-16 XML, which the reader decodes as well.
        if bytes.starts(with: [0xFE, 0xFF]) || bytes.starts(with: [0xFF, 0xFE]) { return true }
        var rest = bytes[...]
        if rest.starts(with: [0xEF, 0xBB, 0xBF]) { rest = rest.dropFirst(3) }
        rest = rest.drop { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
        return ["<?xml", "<!DOCTYPE plist", "<plist", "<!--"].contains { rest.starts(with: Array($0.utf8)) }
    }

    /// Parses an XML or binary property list whose top level is a dictionary, through
    /// ``PropertyListReader`` (bounded). Failures carry `code` and a message that starts with `what`;
    /// a property list over the limits is `plist-too-complex`.
    ///
    /// An entitlements file read on its own (`entitlements FILE`) gives the codes `--entitlements`
    /// gives: `tooComplexCode` `entitlements-too-complex`, `notDictionaryCode`
    /// `entitlements-not-a-dictionary`.
    static func parseDictionary(_ bytes: [UInt8], code: String, what: String, tooComplexCode: String = "plist-too-complex",
                                notDictionaryCode: String? = nil) throws(AppBundleError) -> [String: PlistValue] {
        let value: PlistValue
        do {
            value = try PropertyListReader.decode(bytes)
        } catch {
            throw AppBundleError(error.kind == .tooComplex ? tooComplexCode : code, "\(what): \(error.message)")
        }
        guard case .dictionary(let dictionary) = value else {
            throw AppBundleError(notDictionaryCode ?? code, "\(what)'s top level is not a dictionary")
        }
        return dictionary
    }

    /// A short name of the value's type for messages: `string`, `boolean`, `integer`, `real`,
    /// `date`, `data`, `array` or `dictionary`.
    public var typeName: String {
        switch self {
        case .string: "string"
        case .bool: "boolean"
        case .integer, .unsigned: "integer"
        case .real: "real"
        case .date: "date"
        case .data: "data"
        case .array: "array"
        case .dictionary: "dictionary"
        }
    }

    /// The string, when this is one.
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The strings of an array (non-strings as `nil`), when this is an array.
    public var stringArray: [String?]? {
        if case .array(let values) = self { return values.map(\.stringValue) }
        return nil
    }

    public var description: String {
        switch self {
        case .string(let value): "\"\(value)\""
        case .bool(let value): value ? "true" : "false"
        case .integer(let value): "\(value)"
        case .unsigned(let value): "\(value)"
        case .real(let value): "\(value)"
        case .date(let value): ISO8601DateFormatter().string(from: value)
        case .data(let value): "<\(value.count) bytes>"
        case .array(let values): "[" + values.map(\.description).joined(separator: ", ") + "]"
        case .dictionary(let values):
            "{" + values.keys.sorted().map { "\($0): \(values[$0]?.description ?? "")" }.joined(separator: ", ") + "}"
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let value): try container.encode(value)
        case .bool(let value): try container.encode(value)
        case .integer(let value): try container.encode(value)
        case .unsigned(let value): try container.encode(value)
        // JSON has no NaN or infinity: `"nan"`, `"inf"`, `"-inf"` (a `<real>nan</real>` in a
        // profile made entitlements --json fail with internal-error).
        case .real(let value) where !value.isFinite: try container.encode(value.isNaN ? "nan" : (value > 0 ? "inf" : "-inf"))
        case .real(let value): try container.encode(value)
        case .date(let value): try container.encode(Timestamp.string(value))
        case .data(let value): try container.encode(Data(value).base64EncodedString())
        case .array(let values): try container.encode(values)
        case .dictionary(let values): try container.encode(values)
        }
    }
}
