import Foundation

/// The version of every `--json` document's shape: the first key of each document,
/// `"schemaVersion"`. It changes when a key is renamed or removed or a value changes meaning
/// (adding a key does not change it).
public enum JSONSchemaVersion {
    /// The current version.
    public static let current = 1
}

/// The one JSON encoding of every `--json` document: an `Encoder` that writes bytes directly,
/// without Foundation's `JSONEncoder`. The records written once per host or entry
/// (``DirectJSONWritable``: ``DomainReport``, ``EntryVerdict`` and what they hold) write the same
/// bytes themselves, faster; every other type goes through `Encodable`.
///
/// The rules it gives every `Encodable` (synthesized conformances included):
/// - **No key is ever left out.** `encodeIfPresent(nil, forKey:)` writes `null`, so every key a
///   type declares is present; empty collections are written as `[]` and `{}`.
/// - Keys in the order they are encoded (a synthesized conformance: the order of declaration);
///   the keys of a `[String: V]` dictionary sorted.
/// - `Date` as an ISO 8601 string in UTC, whole seconds (`2026-11-23T18:00:00Z`); `Data` as
///   base64; `URL` as its absolute string; a non-finite floating-point number is an error.
/// - Strings escaped as JSON requires (`"`, `\`, control characters), and also DEL, the C1
///   controls and U+2028/U+2029 as `\uXXXX`, so the output is safe on a terminal and in
///   JavaScript; `/` is not escaped.
/// - Pretty output: two spaces per level, `"key": value`, one member or element a line, empty
///   containers on one line; compact output: no whitespace at all (one line).
/// A JSON number as its text (from ``JSONParser``, so valid JSON): ``ReportJSONWriter`` writes it
/// unchanged; other encoders get the nearest `Double` (a string when it is not finite).
public struct JSONNumberText: Encodable, Sendable, Hashable {
    /// The number as written.
    public let text: String

    /// A number as written; it must be valid JSON number syntax.
    public init(_ text: String) {
        self.text = text
    }

    public func encode(to encoder: any Encoder) throws {
        var single = encoder.singleValueContainer()
        if let value = Double(text), value.isFinite { try single.encode(value) } else { try single.encode(text) }
    }
}

public struct ReportJSONWriter: Sendable {
    /// The layout.
    public enum Style: Sendable {
        /// Indented, one member a line.
        case pretty
        /// One line without whitespace (line protocols).
        case compact
    }

    /// The layout used.
    public var style: Style

    /// Creates a writer.
    public init(style: Style = .pretty) {
        self.style = style
    }

    /// Encodes a value. With `depth` > 0 (pretty style), lines after the first are indented as if
    /// the value started at that nesting level, so it can be placed inside a document written
    /// piece by piece.
    public func encode<T: Encodable>(_ value: T, depth: Int = 0) throws -> [UInt8] {
        // The per-host and per-entry records write themselves (the same bytes, much faster).
        if let direct = value as? any DirectJSONWritable {
            var out = DirectJSON(pretty: style == .pretty, depth: depth)
            try direct.writeJSON(to: &out)
            return out.bytes
        }
        return try encodeThroughEncodable(value, depth: depth)
    }

    /// ``encode(_:depth:)`` through `Encodable` for every type (what a ``DirectJSONWritable``
    /// type's own writer must match).
    func encodeThroughEncodable<T: Encodable>(_ value: T, depth: Int = 0) throws -> [UInt8] {
        let sink = JSONByteSink(pretty: style == .pretty)
        try sink.encodeRoot(value, depth: depth)
        return sink.bytes
    }

    /// ``encode(_:depth:)`` as a string.
    public func string<T: Encodable>(_ value: T, depth: Int = 0) throws -> String {
        String(decoding: try encode(value, depth: depth), as: UTF8.self)
    }

    /// A string as a JSON string literal, quotes included (the escaping of every string value).
    public static func quoted(_ text: String) -> String {
        var bytes: [UInt8] = []
        JSONByteSink.appendQuoted(text, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }
}

// MARK: - The byte sink: open containers as a stack of frames

/// Writes JSON text for an encoding in progress. Each open container, and each place that awaits
/// one value, is a frame on a stack; a write through a container first closes every frame opened
/// after that container's, so values land in order without buffering.
final class JSONByteSink {
    enum Kind {
        /// A place for one value (`filled` once written).
        case slot
        case object
        case array
    }

    struct Frame {
        var kind: Kind
        /// Members or elements written (for a slot: 1 once filled).
        var count: Int
        /// The nesting level of the line the container starts on.
        var depth: Int
        /// Identifies the frame, so a container kept after its value was finished is caught.
        var id: Int
    }

    // The sink belongs to one encoding on one thread and no access to its state overlaps another,
    // so the run-time exclusivity checks of a class's stored properties (a fifth of the writer's
    // time, every byte and frame written being an access) are left out.
    @exclusivity(unchecked) private(set) var bytes: [UInt8] = []
    let pretty: Bool
    @exclusivity(unchecked) private var frames: [Frame] = []
    @exclusivity(unchecked) private var nextID = 0
    /// The first misuse (or a non-finite number); thrown when the encoding ends.
    private var failure: (any Error)?

    init(pretty: Bool) {
        self.pretty = pretty
        bytes.reserveCapacity(1024)
    }

    func encodeRoot<T: Encodable>(_ value: T, depth: Int) throws {
        let slot = pushSlot(depth: depth)
        try encodeValue(value, slot: slot, codingPath: [])
        if let failure { throw failure }
    }

    // MARK: Frames

    private func makeID() -> Int {
        nextID += 1
        return nextID
    }

    private func pushSlot(depth: Int) -> Int {
        frames.append(Frame(kind: .slot, count: 0, depth: depth, id: makeID()))
        return frames.count - 1
    }

    /// Whether the frame at `index` is still the one with `id` (and not closed).
    func isOpen(_ index: Int, id: Int) -> Bool {
        index < frames.count && frames[index].id == id
    }

    func frameID(_ index: Int) -> Int { frames[index].id }

    /// Closes every frame from `index` up.
    func close(from index: Int) {
        while frames.count > index {
            let frame = frames.removeLast()
            switch frame.kind {
            case .slot:
                // A value that encoded nothing is an empty object, as with JSONEncoder.
                if frame.count == 0 { append("{}") }
            case .object:
                closeContainer(frame, "}")
            case .array:
                closeContainer(frame, "]")
            }
        }
    }

    private func closeContainer(_ frame: Frame, _ bracket: String) {
        if pretty && frame.count > 0 {
            newline(depth: frame.depth)
        }
        append(bracket)
    }

    func fail(_ error: any Error) {
        if failure == nil { failure = error }
    }

    /// Makes the slot at `index` an object or array (or checks that it already is one), closing
    /// whatever was opened inside it since. Returns `false` on misuse.
    func open(_ index: Int, id: Int, as kind: Kind, codingPath: [any CodingKey]) -> Bool {
        guard isOpen(index, id: id) else {
            fail(misuse("a container was used after its value was finished", codingPath))
            return false
        }
        close(from: index + 1)
        switch (frames[index].kind, kind) {
        case (.slot, _) where frames[index].count == 0:
            frames[index].kind = kind
            append(kind == .object ? "{" : "[")
            return true
        case (.object, .object), (.array, .array):
            return true
        default:
            fail(misuse("one value asked for two different containers", codingPath))
            return false
        }
    }

    /// Starts a member of the object at `index`: closes later frames, writes the separator and key.
    func beginMember(_ index: Int, id: Int, key: String, codingPath: [any CodingKey]) -> Bool {
        guard isOpen(index, id: id) else {
            fail(misuse("a keyed container was used after its value was finished", codingPath))
            return false
        }
        close(from: index + 1)
        separator(index)
        JSONByteSink.appendQuoted(key, to: &bytes)
        append(pretty ? ": " : ":")
        return true
    }

    /// Starts an element of the array at `index`.
    func beginElement(_ index: Int, id: Int, codingPath: [any CodingKey]) -> Bool {
        guard isOpen(index, id: id) else {
            fail(misuse("an unkeyed container was used after its value was finished", codingPath))
            return false
        }
        close(from: index + 1)
        separator(index)
        return true
    }

    /// Starts the value of the slot at `index` (a single-value container).
    func beginSingle(_ index: Int, id: Int, codingPath: [any CodingKey]) -> Bool {
        guard isOpen(index, id: id), frames[index].kind == .slot, frames[index].count == 0 else {
            fail(misuse("a single value was encoded twice or after its value was finished", codingPath))
            return false
        }
        close(from: index + 1)
        frames[index].count = 1
        return true
    }

    private func separator(_ index: Int) {
        if frames[index].count > 0 { append(",") }
        frames[index].count += 1
        if pretty { newline(depth: frames[index].depth + 1) }
    }

    private func newline(depth: Int) {
        bytes.append(0x0A)
        bytes.append(contentsOf: repeatElement(0x20, count: depth * 2))
    }

    /// Opens a nested object or array as the value of the member or element just begun in the
    /// frame at `parent`; returns its index and id.
    func pushContainer(_ kind: Kind, parent: Int) -> (index: Int, id: Int) {
        frames.append(Frame(kind: kind, count: 0, depth: frames[parent].depth + 1, id: makeID()))
        append(kind == .object ? "{" : "[")
        return (frames.count - 1, frames[frames.count - 1].id)
    }

    /// A slot for the value of the member or element just begun in the frame at `parent`.
    func pushValueSlot(parent: Int) -> Int {
        pushSlot(depth: frames[parent].depth + 1)
    }

    // MARK: Values

    /// Encodes an `Encodable` into the (fresh) slot at `slot`, then closes it.
    func encodeValue<T: Encodable>(_ value: T, slot: Int, codingPath: [any CodingKey]) throws {
        let id = frames[slot].id
        if !writePrimitive(value, slot: slot, id: id, codingPath: codingPath)
            && !writeSpecial(value, slot: slot, id: id, codingPath: codingPath) {
            try value.encode(to: ReportEncoder(sink: self, frame: slot, frameID: id, codingPath: codingPath))
        }
        close(from: slot)
    }

    /// Writes a `String`, `Int`, `Bool` or `Double` reached through a generic path (an array's
    /// elements, an optional's value) into the slot at `slot` as its own `encode(to:)` would
    /// through a single-value container, without that detour; `false` for every other type.
    /// The type is compared, not cast (a dynamic cast per value costs more than the value).
    func writePrimitive<T: Encodable>(_ value: T, slot: Int, id: Int, codingPath: [any CodingKey]) -> Bool {
        if T.self == String.self {
            if beginSingle(slot, id: id, codingPath: codingPath) { appendString(value as! String) }
        } else if T.self == Int.self {
            if beginSingle(slot, id: id, codingPath: codingPath) { appendInteger(value as! Int) }
        } else if T.self == Bool.self {
            if beginSingle(slot, id: id, codingPath: codingPath) { append(value as! Bool ? "true" : "false") }
        } else if T.self == Double.self {
            if beginSingle(slot, id: id, codingPath: codingPath) { appendFloat(value as! Double, codingPath: codingPath) }
        } else {
            return false
        }
        return true
    }

    /// Writes the types with a fixed JSON form (dates, data, URLs, string-keyed dictionaries with
    /// sorted keys) into the slot at `slot`; `false` for every other type.
    func writeSpecial<T: Encodable>(_ value: T, slot: Int, id: Int, codingPath: [any CodingKey]) -> Bool {
        let text: String
        // The types are compared first: casting every value to each of them is the slow part.
        // (A cast would also unwrap an optional; an optional's value comes back here on its own.)
        if T.self == Date.self {
            text = Timestamp.string(value as! Date)
        } else if T.self == Data.self {
            text = (value as! Data).base64EncodedString()
        } else if T.self == URL.self {
            text = (value as! URL).absoluteString
        } else if T.self == JSONNumberText.self {
            // A number read from JSON, written back as it was read (digits past Int64 or Double's
            // precision, `1e400`, kept exactly).
            if beginSingle(slot, id: id, codingPath: codingPath) { append((value as! JSONNumberText).text) }
            return true
        } else if let dictionary = value as? any JSONStringKeyedDictionary {
            guard open(slot, id: id, as: .object, codingPath: codingPath) else { return true }
            do {
                try dictionary.forEachSorted { key, member in
                    guard beginMember(slot, id: id, key: key, codingPath: codingPath) else { return }
                    let memberSlot = pushValueSlot(parent: slot)
                    try encodeValue(member, slot: memberSlot, codingPath: codingPath + [JSONKey(key)])
                }
            } catch {
                fail(error)
            }
            return true
        } else {
            return false
        }
        if beginSingle(slot, id: id, codingPath: codingPath) { appendString(text) }
        return true
    }

    func append(_ text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    func appendString(_ text: String) {
        JSONByteSink.appendQuoted(text, to: &bytes)
    }

    func appendInteger<I: BinaryInteger>(_ value: I) {
        append(String(value))
    }

    func appendFloat<F: BinaryFloatingPoint & LosslessStringConvertible>(_ value: F, codingPath: [any CodingKey]) {
        guard value.isFinite else {
            fail(EncodingError.invalidValue(value, .init(codingPath: codingPath, debugDescription: "\(value) is not a JSON number")))
            append("null")
            return
        }
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        append(text)
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// Appends `text` as a JSON string literal.
    ///
    /// Works on the UTF-8 bytes: runs of bytes that need no escape are copied at once. Escaped:
    /// `"`, `\`, C0 controls and DEL (bytes below 0x20 and 0x7F), the C1 controls U+0080…U+009F
    /// (`C2 80`…`C2 9F`) and U+2028/U+2029 (`E2 80 A8`/`A9`); every other byte, of any other
    /// character, is copied.
    static func appendQuoted(_ text: String, to bytes: inout [UInt8]) {
        bytes.append(0x22)
        var text = text
        text.withUTF8 { appendEscaped($0, to: &bytes) }
        bytes.append(0x22)
    }

    private static func appendEscaped(_ utf8: UnsafeBufferPointer<UInt8>, to bytes: inout [UInt8]) {
        let count = utf8.count
        var start = 0
        var index = 0
        while index < count {
            let byte = utf8[index]
            if byte >= 0x20 && byte < 0x7F && byte != 0x22 && byte != 0x5C {
                index += 1
                continue
            }
            let scalar: UInt32
            var length = 1
            if byte < 0x80 {
                scalar = UInt32(byte)
            } else if byte == 0xC2, index + 1 < count, utf8[index + 1] < 0xA0 {
                scalar = UInt32(utf8[index + 1])  // C2 xx is U+00xx
                length = 2
            } else if byte == 0xE2, index + 2 < count, utf8[index + 1] == 0x80, utf8[index + 2] == 0xA8 || utf8[index + 2] == 0xA9 {
                scalar = 0x2000 + UInt32(utf8[index + 2] - 0x80)  // E2 80 A8 is U+2028
                length = 3
            } else {
                index += 1
                continue
            }
            if start < index { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<index])) }
            appendEscape(scalar, to: &bytes)
            index += length
            start = index
        }
        if start < count { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<count])) }
    }

    private static func appendEscape(_ value: UInt32, to bytes: inout [UInt8]) {
        switch value {
        case 0x22: bytes.append(0x5C); bytes.append(0x22)
        case 0x5C: bytes.append(0x5C); bytes.append(0x5C)
        case 0x0A: bytes.append(0x5C); bytes.append(0x6E)
        case 0x0D: bytes.append(0x5C); bytes.append(0x72)
        case 0x09: bytes.append(0x5C); bytes.append(0x74)
        case 0x08: bytes.append(0x5C); bytes.append(0x62)
        case 0x0C: bytes.append(0x5C); bytes.append(0x66)
        default:
            bytes.append(0x5C)
            bytes.append(0x75)
            bytes.append(hexDigits[Int((value >> 12) & 0xF)])
            bytes.append(hexDigits[Int((value >> 8) & 0xF)])
            bytes.append(hexDigits[Int((value >> 4) & 0xF)])
            bytes.append(hexDigits[Int(value & 0xF)])
        }
    }

    private func misuse(_ what: String, _ codingPath: [any CodingKey]) -> EncodingError {
        EncodingError.invalidValue("", .init(codingPath: codingPath, debugDescription: what))
    }
}

/// A `[String: V]` dictionary, written with its keys sorted.
protocol JSONStringKeyedDictionary {
    func forEachSorted(_ body: (String, any Encodable) throws -> Void) rethrows
}

extension Dictionary: JSONStringKeyedDictionary where Key == String, Value: Encodable {
    func forEachSorted(_ body: (String, any Encodable) throws -> Void) rethrows {
        for key in keys.sorted() {
            if let value = self[key] { try body(key, value) }
        }
    }
}

/// A coding key made from a string or an index.
struct JSONKey: CodingKey {
    var stringValue: String
    var intValue: Int?

    init(_ string: String) {
        stringValue = string
    }

    init(stringValue: String) {
        self.stringValue = stringValue
    }

    init(intValue: Int) {
        stringValue = String(intValue)
        self.intValue = intValue
    }
}

// MARK: - Encoder and containers

/// The `Encoder` handed to each value: the slot its value goes in.
struct ReportEncoder: Encoder {
    let sink: JSONByteSink
    let frame: Int
    let frameID: Int
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        _ = sink.open(frame, id: frameID, as: .object, codingPath: codingPath)
        return KeyedEncodingContainer(ReportKeyedContainer<Key>(sink: sink, frame: frame, frameID: frameID, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        _ = sink.open(frame, id: frameID, as: .array, codingPath: codingPath)
        return ReportUnkeyedContainer(sink: sink, frame: frame, frameID: frameID, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        ReportSingleValueContainer(sink: sink, frame: frame, frameID: frameID, codingPath: codingPath)
    }
}

/// An object's members. `encodeIfPresent(nil)` writes `null`: no key is ever left out.
struct ReportKeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let sink: JSONByteSink
    let frame: Int
    let frameID: Int
    let codingPath: [any CodingKey]

    private func begin(_ key: Key) -> Bool {
        sink.beginMember(frame, id: frameID, key: key.stringValue, codingPath: codingPath)
    }

    private func superEncoder(named name: String, path: any CodingKey) -> any Encoder {
        guard sink.beginMember(frame, id: frameID, key: name, codingPath: codingPath) else {
            return ReportEncoder(sink: sink, frame: Int.max, frameID: -1, codingPath: codingPath + [path])
        }
        let slot = sink.pushValueSlot(parent: frame)
        return ReportEncoder(sink: sink, frame: slot, frameID: sink.frameID(slot), codingPath: codingPath + [path])
    }

    mutating func encodeNil(forKey key: Key) throws {
        if begin(key) { sink.append("null") }
    }

    mutating func encode(_ value: Bool, forKey key: Key) throws {
        if begin(key) { sink.append(value ? "true" : "false") }
    }

    mutating func encode(_ value: String, forKey key: Key) throws {
        if begin(key) { sink.appendString(value) }
    }

    mutating func encode(_ value: Double, forKey key: Key) throws {
        if begin(key) { sink.appendFloat(value, codingPath: codingPath + [key]) }
    }

    mutating func encode(_ value: Float, forKey key: Key) throws {
        if begin(key) { sink.appendFloat(value, codingPath: codingPath + [key]) }
    }

    mutating func encode(_ value: Int, forKey key: Key) throws { if begin(key) { sink.appendInteger(value) } }
    mutating func encode(_ value: Int8, forKey key: Key) throws { if begin(key) { sink.appendInteger(value) } }
    mutating func encode(_ value: Int16, forKey key: Key) throws { if begin(key) { sink.appendInteger(value) } }
    mutating func encode(_ value: Int32, forKey key: Key) throws { if begin(key) { sink.appendInteger(value) } }
    mutating func encode(_ value: Int64, forKey key: Key) throws { if begin(key) { sink.appendInteger(value) } }
    mutating func encode(_ value: UInt, forKey key: Key) throws { if begin(key) { sink.appendInteger(value) } }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { if begin(key) { sink.appendInteger(value) } }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { if begin(key) { sink.appendInteger(value) } }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { if begin(key) { sink.appendInteger(value) } }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { if begin(key) { sink.appendInteger(value) } }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        guard begin(key) else { return }
        let slot = sink.pushValueSlot(parent: frame)
        try sink.encodeValue(value, slot: slot, codingPath: codingPath + [key])
    }

    // Absent values are written as null (the default implementations would leave the key out).
    // A present value of a primitive type goes to its own `encode` (not the generic one).
    mutating func encodeIfPresent(_ value: Bool?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) } }
    mutating func encodeIfPresent(_ value: String?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) } }
    mutating func encodeIfPresent(_ value: Double?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) } }
    mutating func encodeIfPresent(_ value: Float?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) } }
    mutating func encodeIfPresent(_ value: Int?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) } }
    mutating func encodeIfPresent(_ value: Int8?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) } }
    mutating func encodeIfPresent(_ value: Int16?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) } }
    mutating func encodeIfPresent(_ value: Int32?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) } }
    mutating func encodeIfPresent(_ value: Int64?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) } }
    mutating func encodeIfPresent(_ value: UInt?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) } }
    mutating func encodeIfPresent(_ value: UInt8?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) } }
    mutating func encodeIfPresent(_ value: UInt16?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) } }
    mutating func encodeIfPresent(_ value: UInt32?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) } }
    mutating func encodeIfPresent(_ value: UInt64?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) } }
    mutating func encodeIfPresent<T: Encodable>(_ value: T?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) } }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        let ok = begin(key)
        let nested = ok ? sink.pushContainer(.object, parent: frame) : (index: Int.max, id: -1)
        return KeyedEncodingContainer(ReportKeyedContainer<NestedKey>(sink: sink, frame: nested.index, frameID: nested.id, codingPath: codingPath + [key]))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let ok = begin(key)
        let nested = ok ? sink.pushContainer(.array, parent: frame) : (index: Int.max, id: -1)
        return ReportUnkeyedContainer(sink: sink, frame: nested.index, frameID: nested.id, codingPath: codingPath + [key])
    }

    mutating func superEncoder() -> any Encoder {
        superEncoder(named: "super", path: JSONKey("super"))
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        superEncoder(named: key.stringValue, path: key)
    }
}

/// An array's elements.
struct ReportUnkeyedContainer: UnkeyedEncodingContainer {
    let sink: JSONByteSink
    let frame: Int
    let frameID: Int
    let codingPath: [any CodingKey]
    private(set) var count = 0

    init(sink: JSONByteSink, frame: Int, frameID: Int, codingPath: [any CodingKey]) {
        self.sink = sink
        self.frame = frame
        self.frameID = frameID
        self.codingPath = codingPath
    }

    private mutating func begin() -> Bool {
        count += 1
        return sink.beginElement(frame, id: frameID, codingPath: codingPath)
    }

    mutating func encodeNil() throws { if begin() { sink.append("null") } }
    mutating func encode(_ value: Bool) throws { if begin() { sink.append(value ? "true" : "false") } }
    mutating func encode(_ value: String) throws { if begin() { sink.appendString(value) } }
    mutating func encode(_ value: Double) throws { if begin() { sink.appendFloat(value, codingPath: codingPath) } }
    mutating func encode(_ value: Float) throws { if begin() { sink.appendFloat(value, codingPath: codingPath) } }
    mutating func encode(_ value: Int) throws { if begin() { sink.appendInteger(value) } }
    mutating func encode(_ value: Int8) throws { if begin() { sink.appendInteger(value) } }
    mutating func encode(_ value: Int16) throws { if begin() { sink.appendInteger(value) } }
    mutating func encode(_ value: Int32) throws { if begin() { sink.appendInteger(value) } }
    mutating func encode(_ value: Int64) throws { if begin() { sink.appendInteger(value) } }
    mutating func encode(_ value: UInt) throws { if begin() { sink.appendInteger(value) } }
    mutating func encode(_ value: UInt8) throws { if begin() { sink.appendInteger(value) } }
    mutating func encode(_ value: UInt16) throws { if begin() { sink.appendInteger(value) } }
    mutating func encode(_ value: UInt32) throws { if begin() { sink.appendInteger(value) } }
    mutating func encode(_ value: UInt64) throws { if begin() { sink.appendInteger(value) } }

    mutating func encode<T: Encodable>(_ value: T) throws {
        guard begin() else { return }
        let slot = sink.pushValueSlot(parent: frame)
        try sink.encodeValue(value, slot: slot, codingPath: codingPath + [JSONKey(intValue: count - 1)])
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let ok = begin()
        let nested = ok ? sink.pushContainer(.object, parent: frame) : (index: Int.max, id: -1)
        return KeyedEncodingContainer(ReportKeyedContainer<NestedKey>(sink: sink, frame: nested.index, frameID: nested.id, codingPath: codingPath))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let ok = begin()
        let nested = ok ? sink.pushContainer(.array, parent: frame) : (index: Int.max, id: -1)
        return ReportUnkeyedContainer(sink: sink, frame: nested.index, frameID: nested.id, codingPath: codingPath)
    }

    mutating func superEncoder() -> any Encoder {
        guard begin() else { return ReportEncoder(sink: sink, frame: Int.max, frameID: -1, codingPath: codingPath) }
        let slot = sink.pushValueSlot(parent: frame)
        return ReportEncoder(sink: sink, frame: slot, frameID: sink.frameID(slot), codingPath: codingPath)
    }
}

/// The one value of a slot.
struct ReportSingleValueContainer: SingleValueEncodingContainer {
    let sink: JSONByteSink
    let frame: Int
    let frameID: Int
    let codingPath: [any CodingKey]

    private func begin() -> Bool {
        sink.beginSingle(frame, id: frameID, codingPath: codingPath)
    }

    mutating func encodeNil() throws { if begin() { sink.append("null") } }
    mutating func encode(_ value: Bool) throws { if begin() { sink.append(value ? "true" : "false") } }
    mutating func encode(_ value: String) throws { if begin() { sink.appendString(value) } }
    mutating func encode(_ value: Double) throws { if begin() { sink.appendFloat(value, codingPath: codingPath) } }
    mutating func encode(_ value: Float) throws { if begin() { sink.appendFloat(value, codingPath: codingPath) } }
    mutating func encode(_ value: Int) throws { if begin() { sink.appendInteger(value) } }
    mutating func encode(_ value: Int8) throws { if begin() { sink.appendInteger(value) } }
    mutating func encode(_ value: Int16) throws { if begin() { sink.appendInteger(value) } }
    mutating func encode(_ value: Int32) throws { if begin() { sink.appendInteger(value) } }
    mutating func encode(_ value: Int64) throws { if begin() { sink.appendInteger(value) } }
    mutating func encode(_ value: UInt) throws { if begin() { sink.appendInteger(value) } }
    mutating func encode(_ value: UInt8) throws { if begin() { sink.appendInteger(value) } }
    mutating func encode(_ value: UInt16) throws { if begin() { sink.appendInteger(value) } }
    mutating func encode(_ value: UInt32) throws { if begin() { sink.appendInteger(value) } }
    mutating func encode(_ value: UInt64) throws { if begin() { sink.appendInteger(value) } }

    mutating func encode<T: Encodable>(_ value: T) throws {
        // The value takes this slot: special forms are written here, anything else encodes
        // itself into the same slot (its container opens it).
        guard sink.isOpen(frame, id: frameID) else {
            _ = begin()
            return
        }
        if !sink.writeSpecial(value, slot: frame, id: frameID, codingPath: codingPath) {
            try value.encode(to: ReportEncoder(sink: sink, frame: frame, frameID: frameID, codingPath: codingPath))
        }
    }
}
