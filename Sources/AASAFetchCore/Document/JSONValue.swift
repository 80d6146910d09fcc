/// A position in JSON source text.
///
/// `line` and `column` are 1-based; columns count Unicode scalars (characters as an editor shows
/// them for everything but combining sequences), not bytes. A leading UTF-8 byte order mark is not
/// counted as a column. `offset` is the 0-based byte offset into the original input, BOM included.
public struct JSONPosition: Sendable, Hashable, Codable, CustomStringConvertible {
    /// 1-based line number (`\n`, `\r\n` and a lone `\r` each end a line).
    public var line: Int
    /// 1-based column, counted in Unicode scalars.
    public var column: Int
    /// 0-based byte offset into the input.
    public var offset: Int

    /// Creates a position.
    public init(line: Int, column: Int, offset: Int) {
        self.line = line
        self.column = column
        self.offset = offset
    }

    /// `line:column`.
    public var description: String { "\(line):\(column)" }
}

/// A JSON number, kept as written and as a `Double`.
public struct JSONNumber: Sendable, Hashable {
    /// The number exactly as it appears in the source (`1.50`, `-0`, `1e3`).
    public var text: String
    /// The value as a `Double` (may be rounded or infinite for huge exponents).
    public var value: Double

    /// Creates a number.
    public init(text: String, value: Double) {
        self.text = text
        self.value = value
    }
}

/// One `"key": value` member of a JSON object, in source order.
public struct JSONMember: Sendable, Hashable {
    /// The decoded key.
    public var key: String
    /// Where the key's opening quote is.
    public var keyPosition: JSONPosition
    /// The value.
    public var value: JSONValue

    /// Creates a member.
    public init(key: String, keyPosition: JSONPosition, value: JSONValue) {
        self.key = key
        self.keyPosition = keyPosition
        self.value = value
    }
}

/// A parsed JSON value with the position of its first character.
///
/// Objects keep their members in source order, duplicates included; use ``member(_:)`` for the
/// last occurrence of a key (what Foundation's parser and Apple's devices keep). An object with
/// more than ``JSONKeyIndex/threshold`` members carries a hash index of its keys, built once in
/// linear time, so looking a key up (and resolving a JSON pointer) does not scan the members:
/// with many keys, findings located by pointer would otherwise cost time quadratic in the keys.
public struct JSONValue: Sendable, Hashable {
    /// The kinds of JSON value.
    public enum Kind: Sendable, Hashable {
        /// `null`.
        case null
        /// `true` or `false`.
        case bool(Bool)
        /// A number.
        case number(JSONNumber)
        /// A string, unescaped.
        case string(String)
        /// An array.
        case array([JSONValue])
        /// An object: ordered members, duplicates kept.
        case object([JSONMember])
    }

    /// What the value is.
    public var kind: Kind {
        didSet { keyIndex = JSONKeyIndex(kind) }
    }
    /// Where the value starts.
    public var position: JSONPosition
    /// The key index of a large object (derived from `kind`, so not part of equality).
    private var keyIndex: JSONKeyIndex?

    /// Creates a value.
    public init(_ kind: Kind, at position: JSONPosition) {
        self.kind = kind
        self.position = position
        keyIndex = JSONKeyIndex(kind)
    }

    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        lhs.kind == rhs.kind && lhs.position == rhs.position
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(kind)
        hasher.combine(position)
    }

    /// The string, when this is a string.
    public var stringValue: String? {
        if case .string(let s) = kind { return s }
        return nil
    }

    /// The Boolean, when this is `true` or `false`.
    public var boolValue: Bool? {
        if case .bool(let b) = kind { return b }
        return nil
    }

    /// The elements, when this is an array.
    public var arrayValue: [JSONValue]? {
        if case .array(let a) = kind { return a }
        return nil
    }

    /// The members in source order, when this is an object.
    public var objectMembers: [JSONMember]? {
        if case .object(let m) = kind { return m }
        return nil
    }

    /// The last member named `key`, when this is an object that has one: a hash lookup for a large
    /// object, a scan of at most ``JSONKeyIndex/threshold`` members otherwise.
    public func member(_ key: String) -> JSONMember? {
        guard case .object(let members) = kind else { return nil }
        if let keyIndex {
            CostProbe.count(1)
            return keyIndex.last[key].map { members[$0] }
        }
        CostProbe.count(members.count)
        return members.last { $0.key == key }
    }

    /// The members of an object with duplicates removed (the last occurrence wins), in the order
    /// of each key's first occurrence. Empty for non-objects.
    public var uniqueMembers: [JSONMember] {
        guard let members = objectMembers else { return [] }
        if let keyIndex {
            if !keyIndex.hasDuplicates { return members }
        } else if !JSONValue.hasDuplicateKeys(members) {
            return members
        }
        var index: [String: Int] = [:]
        var result: [JSONMember] = []
        result.reserveCapacity(members.count)
        for member in members {
            if let i = index[member.key] {
                result[i] = member
            } else {
                index[member.key] = result.count
                result.append(member)
            }
        }
        return result
    }

    /// Whether any key occurs twice in this object (from the key index when there is one).
    public var hasDuplicateKeys: Bool {
        if let keyIndex { return keyIndex.hasDuplicates }
        return objectMembers.map(JSONValue.hasDuplicateKeys) ?? false
    }

    /// Whether any key occurs twice (pairwise for at most ``JSONKeyIndex/threshold`` members, a
    /// hash set for more).
    static func hasDuplicateKeys(_ members: [JSONMember]) -> Bool {
        if members.count < 2 { return false }
        if members.count <= JSONKeyIndex.threshold {
            CostProbe.count(members.count * (members.count - 1) / 2)
            for i in 1..<members.count {
                for j in 0..<i where members[j].key == members[i].key { return true }
            }
            return false
        }
        CostProbe.count(members.count)
        var seen = Set<String>(minimumCapacity: members.count)
        for member in members where !seen.insert(member.key).inserted { return true }
        return false
    }

    /// A short name of the value's type for messages: `null`, `boolean`, `number`, `string`,
    /// `array` or `object`.
    public var typeName: String {
        switch kind {
        case .null: "null"
        case .bool: "boolean"
        case .number: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }

    /// The value at a JSON pointer (RFC 6901) below this one; objects resolve to the last member
    /// with the key. `nil` when the pointer does not resolve.
    public func value(at pointer: String) -> JSONValue? {
        if pointer.isEmpty { return self }
        guard pointer.hasPrefix("/") else { return nil }
        var current = self
        for token in pointer.dropFirst().split(separator: "/", omittingEmptySubsequences: false) {
            let key = JSONPointer.unescape(String(token))
            switch current.kind {
            case .object:
                guard let m = current.member(key) else { return nil }
                current = m.value
            case .array(let elements):
                guard let i = Int(key), i >= 0, i < elements.count, String(i) == key else { return nil }
                current = elements[i]
            default:
                return nil
            }
        }
        return current
    }
}

/// The hash index of a large object's keys: where each key occurs last, and whether any occurs
/// twice. Built in one pass when the value is created; shared, never changed.
final class JSONKeyIndex: Sendable {
    /// Objects with more members than this get an index; smaller ones are scanned.
    static let threshold = 16

    /// The position of each key's last occurrence among the members.
    let last: [String: Int]
    /// Whether a key occurs more than once.
    let hasDuplicates: Bool

    /// The index of an object with more than ``threshold`` members, else `nil`.
    init?(_ kind: JSONValue.Kind) {
        guard case .object(let members) = kind, members.count > Self.threshold else { return nil }
        var last: [String: Int] = [:]
        last.reserveCapacity(members.count)
        for (position, member) in members.enumerated() { last[member.key] = position }
        CostProbe.count(members.count)
        self.last = last
        hasDuplicates = last.count != members.count
    }
}

/// A parsed JSON text.
public struct JSONDocument: Sendable, Hashable {
    /// The top-level value.
    public var root: JSONValue
    /// Whether the input started with a UTF-8 byte order mark (accepted, but worth reporting).
    public var hadBOM: Bool

    /// Creates a document.
    public init(root: JSONValue, hadBOM: Bool) {
        self.root = root
        self.hadBOM = hadBOM
    }
}

/// JSON pointer (RFC 6901) helpers.
public enum JSONPointer {
    /// Escapes one reference token: `~` → `~0`, `/` → `~1`.
    public static func escape(_ token: String) -> String {
        guard token.utf8.contains(where: { $0 == 0x7E || $0 == 0x2F }) else { return token }
        return token.replacingAll("~", with: "~0").replacingAll("/", with: "~1")
    }

    /// Unescapes one reference token: `~1` → `/`, `~0` → `~` (in that order).
    public static func unescape(_ token: String) -> String {
        guard token.utf8.contains(0x7E) else { return token }
        return token.replacingAll("~1", with: "/").replacingAll("~0", with: "~")
    }

    /// Appends a key or index to a pointer.
    public static func appending(_ pointer: String, _ token: String) -> String {
        pointer + "/" + escape(token)
    }

    /// Appends an array index to a pointer.
    public static func appending(_ pointer: String, _ index: Int) -> String {
        pointer + "/" + String(index)
    }
}

extension String {
    /// Replaces every occurrence of `target` (non-empty) with `replacement`, without Foundation.
    func replacingAll(_ target: String, with replacement: String) -> String {
        let t = Array(target.unicodeScalars)
        guard !t.isEmpty else { return self }
        var out = String.UnicodeScalarView()
        let scalars = Array(unicodeScalars)
        var i = 0
        while i < scalars.count {
            if i + t.count <= scalars.count, Array(scalars[i..<(i + t.count)]) == t {
                out.append(contentsOf: replacement.unicodeScalars)
                i += t.count
            } else {
                out.append(scalars[i])
                i += 1
            }
        }
        return String(out)
    }
}
