import Foundation

/// Why a property list could not be decoded.
public struct PropertyListError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of problem it is.
    public enum Kind: String, Sendable, Hashable {
        /// Not an XML or binary property list, or broken inside.
        case malformed
        /// A binary property list whose objects refer back to themselves.
        case cyclic
        /// Over a ``PropertyListReader/Limits`` bound: nested too deep, or shared objects that
        /// expand to too many values or bytes.
        case tooComplex
    }

    /// What kind of problem it is.
    public var kind: Kind
    /// What went wrong, for people.
    public var message: String

    /// Creates an error.
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}

/// The one place property lists are decoded (entitlements files, `Info.plist`, the XML entitlements
/// of a code signature, a provisioning profile's content), with bounds on what they may expand to.
///
/// A binary plist (`bplist00`) is decoded here, not by Foundation: its objects are referred to by
/// number, so a 200-byte file whose arrays name one child twice, 24 levels deep, stands for 2^24
/// values. Each object is decoded once and shared; the values it stands for are counted (with the
/// depth and the string and data bytes) and the file is refused past ``Limits``, before anything
/// walks the expanded tree. A reference cycle is refused with its own message. XML goes to
/// Foundation's `PropertyListSerialization`, whose output cannot share objects; the same limits are
/// checked while it is converted. Foundation's old-style text format is refused.
public enum PropertyListReader {
    /// Bounds on what one property list may expand to.
    public struct Limits: Sendable, Hashable {
        /// The deepest nesting of arrays and dictionaries (the top level is depth 1).
        public var maxDepth: Int
        /// The most values, counted as if every shared object were copied where it is used.
        public var maxValues: Int
        /// The most string and data bytes (UTF-8), counted the same way.
        public var maxBytes: Int

        /// 64 levels, 100,000 values, 16 MiB: hundreds of times what real entitlements, `Info.plist`
        /// files and profiles hold.
        public static let standard = Limits(maxDepth: 64, maxValues: 100_000, maxBytes: 16 << 20)

        /// Creates limits.
        public init(maxDepth: Int, maxValues: Int, maxBytes: Int) {
            self.maxDepth = maxDepth
            self.maxValues = maxValues
            self.maxBytes = maxBytes
        }
    }

    /// Decodes an XML or binary property list.
    /// - Throws: ``PropertyListError``: malformed input, a reference cycle, or a plist over `limits`.
    public static func decode(_ bytes: [UInt8], limits: Limits = .standard) throws(PropertyListError) -> PlistValue {
        if bytes.starts(with: Array("bplist".utf8)) {
            var reader = try BinaryPlistReader(bytes: bytes, limits: limits)
            return try reader.decodeTop()
        }
        // XML (UTF-8, possibly after a byte order mark and white space, or UTF-16). Foundation's
        // old-style text format is not accepted: it would read any word as a string.
        let text = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? bytes.dropFirst(3) : bytes[...]
        let first = text.first { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }
        guard first == UInt8(ascii: "<") || bytes.starts(with: [0xFE, 0xFF]) || bytes.starts(with: [0xFF, 0xFE]) else {
            let shown = String(decoding: bytes.prefix(8), as: UTF8.self).debugDescription
            throw PropertyListError(.malformed, "not an XML or binary property list (it starts with \(bytes.isEmpty ? "nothing" : shown))")
        }
        let object: Any
        do {
            object = try PropertyListSerialization.propertyList(from: Data(bytes), options: [], format: nil)
        } catch {
            let detail = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String ?? "\(error)"
            // Foundation stops at 512 levels of nesting, before the depth limit here could: the
            // same refusal, by the same kind (past 64 levels).
            if detail.range(of: "too many nested", options: .caseInsensitive) != nil {
                throw PropertyListError(.tooComplex, "nested more than \(limits.maxDepth) levels deep (\(detail))")
            }
            throw PropertyListError(.malformed, "not a valid property list: \(detail)")
        }
        var budget = Budget(limits: limits)
        return try budget.convert(object, depth: 1)
    }

    /// What is left of the limits while a Foundation object graph is converted.
    struct Budget {
        let limits: Limits
        var values = 0
        var bytes = 0

        init(limits: Limits) {
            self.limits = limits
        }

        mutating func count(depth: Int, bytes added: Int) throws(PropertyListError) {
            values += 1
            bytes += added
            try PropertyListReader.check(depth: depth, values: values, bytes: bytes, limits: limits)
        }

        /// Converts what `PropertyListSerialization` returns.
        mutating func convert(_ value: Any, depth: Int) throws(PropertyListError) -> PlistValue {
            if type(of: value) == Bool.self, let bool = value as? Bool {
                try count(depth: depth, bytes: 0)
                return .bool(bool)
            } else if let string = value as? String {
                try count(depth: depth, bytes: string.utf8.count)
                return .string(string)
            } else if let date = value as? Date {
                try count(depth: depth, bytes: 0)
                return .date(date)
            } else if let data = value as? Data {
                try count(depth: depth, bytes: data.count)
                return .data([UInt8](data))
            } else if let array = value as? [Any] {
                try count(depth: depth, bytes: 0)
                var values: [PlistValue] = []
                values.reserveCapacity(array.count)
                for element in array { values.append(try convert(element, depth: depth + 1)) }
                return .array(values)
            } else if let dictionary = value as? [String: Any] {
                try count(depth: depth, bytes: 0)
                var values: [String: PlistValue] = [:]
                for (key, element) in dictionary {
                    try count(depth: depth + 1, bytes: key.utf8.count)
                    values[key] = try convert(element, depth: depth + 1)
                }
                return .dictionary(values)
            } else if let number = value as? NSNumber {
                try count(depth: depth, bytes: 0)
                switch String(cString: number.objCType) {
                case "c", "B": return .bool(number.boolValue)
                case "f", "d": return .real(number.doubleValue)
                // Unsigned past Int64.max: its int64Value is negative (18446744073709551615 was -1).
                case "Q" where number.uint64Value > UInt64(Int64.max): return .unsigned(number.uint64Value)
                default: return .integer(number.int64Value)
                }
            }
            throw PropertyListError(.malformed, "the property list holds an unsupported value (\(type(of: value)))")
        }
    }

    /// Fails when a value at `depth`, or the running totals, are over `limits`.
    static func check(depth: Int, values: Int, bytes: Int, limits: Limits) throws(PropertyListError) {
        if depth > limits.maxDepth {
            throw PropertyListError(.tooComplex, "the property list nests arrays and dictionaries deeper than \(limits.maxDepth) levels")
        }
        if values > limits.maxValues {
            throw PropertyListError(.tooComplex, "the property list expands to more than \(limits.maxValues) values (objects shared by reference count each time they are used)")
        }
        if bytes > limits.maxBytes {
            throw PropertyListError(.tooComplex, "the property list expands to more than \(limits.maxBytes) bytes of strings and data (objects shared by reference count each time they are used)")
        }
    }
}

/// A bounds-checked reader of Apple's binary property list format (`bplist00`): header, objects,
/// offset table and a 32-byte trailer. Every object is decoded at most once; what it expands to
/// (values, bytes, height) is remembered with it.
struct BinaryPlistReader {
    private struct Decoded {
        var value: PlistValue
        /// Values it stands for, itself included (saturating).
        var values: Int
        /// String and data bytes it stands for (saturating).
        var bytes: Int
        /// Levels of arrays and dictionaries below and including it (1 for a scalar).
        var height: Int
    }

    private let view: ByteView
    private let limits: PropertyListReader.Limits
    private let offsets: [Int]
    private let referenceSize: Int
    private let top: Int
    /// Where the object area ends (the offset table starts).
    private let objectsEnd: Int
    private var decoded: [Decoded?]
    private var onPath: [Bool]

    init(bytes: [UInt8], limits: PropertyListReader.Limits) throws(PropertyListError) {
        let view = ByteView(bytes)
        guard bytes.starts(with: Array("bplist00".utf8)) else {
            throw Self.malformed("only version 00 is read (the file starts with \(String(decoding: bytes.prefix(8), as: UTF8.self).debugDescription))")
        }
        guard view.count >= 8 + 1 + 32, let trailer = view.view(offset: view.count - 32, length: 32),
              let offsetSize = trailer.uint8(at: 6), let referenceSize = trailer.uint8(at: 7),
              let objectCount = trailer.uint64BE(at: 8), let top = trailer.uint64BE(at: 16),
              let tableOffset = trailer.uint64BE(at: 24)
        else { throw Self.malformed("the file is too short for a trailer") }
        guard (1...8).contains(offsetSize), (1...8).contains(referenceSize) else {
            throw Self.malformed("the trailer gives offsets of \(offsetSize) bytes and references of \(referenceSize) bytes")
        }
        let objectsEnd = view.count - 32
        guard let count = Int(checked: objectCount), count >= 1, let tableStart = Int(checked: tableOffset),
              tableStart >= 9, tableStart <= objectsEnd,
              count <= (objectsEnd - tableStart) / Int(offsetSize), count <= tableStart - 8
        else { throw Self.malformed("the trailer's object count or offset table does not fit the file") }
        guard let topIndex = Int(checked: top), topIndex < count else {
            throw Self.malformed("the top object \(top) is not one of the \(count) objects")
        }
        var offsets: [Int] = []
        offsets.reserveCapacity(count)
        for index in 0..<count {
            var offset = 0
            for k in 0..<Int(offsetSize) {
                guard let byte = view.uint8(at: tableStart + index * Int(offsetSize) + k) else {
                    throw Self.malformed("the offset table is cut short")
                }
                offset = offset << 8 | Int(byte)
            }
            guard offset >= 8, offset < tableStart else {
                throw Self.malformed("object \(index) is said to start at \(offset), outside the object area")
            }
            offsets.append(offset)
        }
        self.view = view
        self.limits = limits
        self.offsets = offsets
        self.referenceSize = Int(referenceSize)
        self.top = topIndex
        self.objectsEnd = tableStart
        decoded = Array(repeating: nil, count: count)
        onPath = Array(repeating: false, count: count)
    }

    private static func malformed(_ detail: String) -> PropertyListError {
        PropertyListError(.malformed, "not a valid binary property list: \(detail)")
    }

    mutating func decodeTop() throws(PropertyListError) -> PlistValue {
        let result = try object(top, depth: 1)
        try PropertyListReader.check(depth: result.height, values: result.values, bytes: result.bytes, limits: limits)
        return result.value
    }

    /// Object `index` reached at `depth`: decoded once, then shared; its expansion is checked
    /// against the limits from where it is used.
    private mutating func object(_ index: Int, depth: Int) throws(PropertyListError) -> Decoded {
        if let known = decoded[index] {
            try PropertyListReader.check(depth: depth + known.height - 1, values: known.values, bytes: known.bytes, limits: limits)
            return known
        }
        if onPath[index] {
            throw PropertyListError(.cyclic, "not a valid binary property list: object \(index) contains itself (a reference cycle)")
        }
        try PropertyListReader.check(depth: depth, values: 0, bytes: 0, limits: limits)
        onPath[index] = true
        let result = try parse(index, depth: depth)
        onPath[index] = false
        try PropertyListReader.check(depth: depth + result.height - 1, values: result.values, bytes: result.bytes, limits: limits)
        decoded[index] = result
        return result
    }

    /// Adds without overflow, stopping just past any limit.
    private static func add(_ a: Int, _ b: Int) -> Int {
        let (sum, overflow) = a.addingReportingOverflow(b)
        return overflow ? Int.max : sum
    }

    private mutating func parse(_ index: Int, depth: Int) throws(PropertyListError) -> Decoded {
        let offset = offsets[index]
        guard let marker = view.uint8(at: offset) else { throw Self.malformed("object \(index) is cut short") }
        let kind = marker >> 4
        let info = Int(marker & 0x0F)
        func scalar(_ value: PlistValue, bytes: Int = 0) -> Decoded { Decoded(value: value, values: 1, bytes: bytes, height: 1) }
        switch kind {
        case 0x0:
            switch info {
            case 0x8: return scalar(.bool(false))
            case 0x9: return scalar(.bool(true))
            default: throw Self.malformed("object \(index) has the unsupported marker 0x\(String(marker, radix: 16))")
            }
        case 0x1:
            if info == 4, let unsigned = try unsignedAbove64BitSigned(at: offset, object: index) { return scalar(.unsigned(unsigned)) }
            return scalar(.integer(try integer(at: offset, info: info, object: index)))
        case 0x2:
            switch info {
            case 2:
                guard let raw = view.uint32BE(at: offset + 1), offset + 5 <= objectsEnd else { throw Self.malformed("real \(index) is cut short") }
                return scalar(.real(Double(Float(bitPattern: raw))))
            case 3:
                guard let raw = view.uint64BE(at: offset + 1), offset + 9 <= objectsEnd else { throw Self.malformed("real \(index) is cut short") }
                return scalar(.real(Double(bitPattern: raw)))
            default:
                throw Self.malformed("real \(index) has \(1 << info) bytes")
            }
        case 0x3:
            guard info == 3, let raw = view.uint64BE(at: offset + 1), offset + 9 <= objectsEnd else {
                throw Self.malformed("date \(index) is not an 8-byte real")
            }
            let seconds = Double(bitPattern: raw)
            guard seconds.isFinite else { throw Self.malformed("date \(index) is not a finite time") }
            return scalar(.date(Date(timeIntervalSinceReferenceDate: seconds)))
        case 0x4:
            let (count, start) = try length(at: offset, info: info, object: index)
            guard let slice = slice(start, count) else { throw Self.malformed("data \(index) runs past the object area") }
            return scalar(.data(Array(slice)), bytes: count)
        case 0x5:
            let (count, start) = try length(at: offset, info: info, object: index)
            guard let slice = slice(start, count) else { throw Self.malformed("string \(index) runs past the object area") }
            guard slice.allSatisfy({ $0 < 0x80 }) else { throw Self.malformed("ASCII string \(index) holds a byte above 0x7F") }
            return scalar(.string(String(decoding: slice, as: UTF8.self)), bytes: count)
        case 0x6:
            let (count, start) = try length(at: offset, info: info, object: index)
            guard count <= Int.max / 2, let slice = slice(start, count * 2) else {
                throw Self.malformed("string \(index) runs past the object area")
            }
            var units: [UInt16] = []
            units.reserveCapacity(count)
            var position = slice.startIndex
            while position < slice.endIndex {
                units.append(UInt16(slice[position]) << 8 | UInt16(slice[position + 1]))
                position += 2
            }
            let string = String(decoding: units, as: UTF16.self)
            return scalar(.string(string), bytes: string.utf8.count)
        case 0xA:
            let (count, start) = try length(at: offset, info: info, object: index)
            let references = try references(start, count, object: index)
            var values: [PlistValue] = []
            values.reserveCapacity(count)
            var total = Decoded(value: .array([]), values: 1, bytes: 0, height: 1)
            for reference in references {
                let child = try object(reference, depth: depth + 1)
                values.append(child.value)
                total.values = Self.add(total.values, child.values)
                total.bytes = Self.add(total.bytes, child.bytes)
                total.height = max(total.height, child.height + 1)
                try PropertyListReader.check(depth: depth, values: total.values, bytes: total.bytes, limits: limits)
            }
            total.value = .array(values)
            return total
        case 0xD:
            let (count, start) = try length(at: offset, info: info, object: index)
            guard count <= Int.max / 2 else { throw Self.malformed("dictionary \(index) is too long") }
            let keys = try references(start, count, object: index)
            let objects = try references(start + count * referenceSize, count, object: index)
            var values: [String: PlistValue] = [:]
            values.reserveCapacity(count)
            var total = Decoded(value: .dictionary([:]), values: 1, bytes: 0, height: 1)
            for (keyIndex, valueIndex) in zip(keys, objects) {
                let key = try object(keyIndex, depth: depth + 1)
                guard case .string(let name) = key.value else {
                    throw Self.malformed("dictionary \(index) has a key that is not a string")
                }
                let child = try object(valueIndex, depth: depth + 1)
                values[name] = child.value
                total.values = Self.add(total.values, Self.add(key.values, child.values))
                total.bytes = Self.add(total.bytes, Self.add(key.bytes, child.bytes))
                total.height = max(total.height, child.height + 1)
                try PropertyListReader.check(depth: depth, values: total.values, bytes: total.bytes, limits: limits)
            }
            total.value = .dictionary(values)
            return total
        default:
            throw Self.malformed("object \(index) has the unsupported marker 0x\(String(marker, radix: 16)) (UIDs, sets and other types are not read)")
        }
    }

    /// The bytes `start..<start+count` inside the object area.
    private func slice(_ start: Int, _ count: Int) -> ArraySlice<UInt8>? {
        guard count >= 0, start <= objectsEnd, count <= objectsEnd - start else { return nil }
        return view.slice(offset: start, length: count)
    }

    /// A 16-byte integer object whose value is an unsigned 64-bit one past `Int64.max` (how
    /// Apple writes such values); `nil` for any other value.
    private func unsignedAbove64BitSigned(at offset: Int, object index: Int) throws(PropertyListError) -> UInt64? {
        guard let bytes = slice(offset + 1, 16) else { throw Self.malformed("integer \(index) is cut short") }
        let low = bytes.suffix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return bytes.prefix(8).allSatisfy({ $0 == 0 }) && low > UInt64(Int64.max) ? low : nil
    }

    /// An integer object's value (1, 2 and 4 bytes unsigned, 8 bytes signed, 16 bytes when it fits).
    private func integer(at offset: Int, info: Int, object index: Int) throws(PropertyListError) -> Int64 {
        guard info <= 4 else { throw Self.malformed("integer \(index) has \(1 << min(info, 30)) bytes") }
        let width = 1 << info
        guard let bytes = slice(offset + 1, width) else { throw Self.malformed("integer \(index) is cut short") }
        if width == 16 {
            let high = bytes.prefix(8)
            let low = bytes.suffix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            if high.allSatisfy({ $0 == 0 }), low <= UInt64(Int64.max) { return Int64(low) }
            if high.allSatisfy({ $0 == 0xFF }), low > UInt64(Int64.max) { return Int64(bitPattern: low) }
            throw Self.malformed("integer \(index) does not fit 64 bits")
        }
        let value = bytes.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return width == 8 ? Int64(bitPattern: value) : Int64(value)
    }

    /// The element count of a data, string, array or dictionary object and where its content starts:
    /// the marker's low nibble, or 0xF followed by an integer object.
    private func length(at offset: Int, info: Int, object index: Int) throws(PropertyListError) -> (count: Int, start: Int) {
        if info != 0xF { return (info, offset + 1) }
        guard let marker = view.uint8(at: offset + 1), marker >> 4 == 0x1 else {
            throw Self.malformed("object \(index) has a malformed length")
        }
        let width = 1 << Int(marker & 0x0F)
        let value = try integer(at: offset + 1, info: Int(marker & 0x0F), object: index)
        guard value >= 0, let count = Int(exactly: value) else { throw Self.malformed("object \(index) has a negative length") }
        return (count, offset + 2 + width)
    }

    /// `count` object references starting at `start`, each checked to name an object.
    private func references(_ start: Int, _ count: Int, object index: Int) throws(PropertyListError) -> [Int] {
        guard count <= Int.max / referenceSize, let bytes = slice(start, count * referenceSize) else {
            throw Self.malformed("object \(index) lists references past the object area")
        }
        var result: [Int] = []
        result.reserveCapacity(count)
        var position = bytes.startIndex
        for _ in 0..<count {
            // Read as unsigned: an 8-byte reference with its top bit set must not become negative.
            var reference: UInt64 = 0
            for _ in 0..<referenceSize {
                reference = reference << 8 | UInt64(bytes[position])
                position += 1
            }
            guard let reference = Int(exactly: reference), reference < offsets.count else {
                throw Self.malformed("object \(index) refers to object \(reference), but there are \(offsets.count)")
            }
            result.append(reference)
        }
        return result
    }
}
