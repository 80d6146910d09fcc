/// A value that writes its own JSON, byte for byte what ``ReportJSONWriter``'s `Encodable` path
/// writes for it (same keys in the same order, `null` for absent values, sorted dictionary keys,
/// the same escaping and layout).
///
/// The records written once per host or entry of a run (``DomainReport``, ``EntryVerdict`` and
/// what they hold) take this path: going through `Encodable`'s containers and witness tables cost
/// about 30 µs a host, a tenth of a `--route cdn` run's CPU, on the one task that judges and prints
/// in start order. `DirectJSONTests` compare both paths over generated values of every shape.
protocol DirectJSONWritable: Encodable {
    /// Writes the value as one JSON value at the writer's position.
    func writeJSON(to out: inout DirectJSON) throws
}

/// Writes JSON text by hand, with ``ReportJSONWriter``'s layout rules: pretty (two spaces a level,
/// one member or element a line, `"key": value`, empty containers on one line) or compact.
struct DirectJSON {
    /// The text written so far.
    private(set) var bytes: [UInt8] = []
    let pretty: Bool
    /// The nesting level the root value starts at (lines after its first are indented for it).
    private let rootDepth: Int
    /// Per open container: its nesting level and its members or elements so far.
    private var open: [(depth: Int, count: Int)] = []

    init(pretty: Bool, depth: Int) {
        self.pretty = pretty
        rootDepth = depth
        bytes.reserveCapacity(1024)
        open.reserveCapacity(8)
    }

    // MARK: Containers

    /// The level of a container opened now: the root's, or one below the innermost open one.
    private var nextDepth: Int { open.last.map { $0.depth + 1 } ?? rootDepth }

    mutating func beginObject() {
        open.append((nextDepth, 0))
        bytes.append(0x7B)
    }

    mutating func endObject() {
        close(0x7D)
    }

    mutating func beginArray() {
        open.append((nextDepth, 0))
        bytes.append(0x5B)
    }

    mutating func endArray() {
        close(0x5D)
    }

    private mutating func close(_ bracket: UInt8) {
        let container = open.removeLast()
        if pretty && container.count > 0 { newline(depth: container.depth) }
        bytes.append(bracket)
    }

    /// Starts a member or element of the innermost container: the comma and the line break.
    private mutating func separator() {
        let last = open.count - 1
        if open[last].count > 0 { bytes.append(0x2C) }
        open[last].count += 1
        if pretty { newline(depth: open[last].depth + 1) }
    }

    private mutating func newline(depth: Int) {
        bytes.append(0x0A)
        bytes.append(contentsOf: repeatElement(0x20, count: depth * 2))
    }

    /// Starts a member: the separator and the key (an ASCII name that needs no escape).
    mutating func key(_ name: StaticString) {
        separator()
        bytes.append(0x22)
        name.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(0x22)
        bytes.append(0x3A)
        if pretty { bytes.append(0x20) }
    }

    /// Starts a member whose key is data (a dictionary's key), escaped as any string. (A
    /// literal key takes ``key(_:)``: a `StaticString`, written without an escape scan.)
    mutating func key(escaping name: String) {
        separator()
        JSONByteSink.appendQuoted(name, to: &bytes)
        bytes.append(0x3A)
        if pretty { bytes.append(0x20) }
    }

    /// Starts an element of the innermost array.
    mutating func element() {
        separator()
    }

    // MARK: Values

    mutating func null() {
        bytes.append(contentsOf: [0x6E, 0x75, 0x6C, 0x6C])
    }

    mutating func string(_ value: String) {
        JSONByteSink.appendQuoted(value, to: &bytes)
    }

    mutating func string(_ value: String?) {
        if let value { string(value) } else { null() }
    }

    mutating func int(_ value: Int) {
        if value >= 0 && value < 10 {
            bytes.append(0x30 + UInt8(value))
        } else {
            bytes.append(contentsOf: String(value).utf8)
        }
    }

    mutating func int(_ value: Int?) {
        if let value { int(value) } else { null() }
    }

    mutating func bool(_ value: Bool) {
        if value {
            bytes.append(contentsOf: [0x74, 0x72, 0x75, 0x65])
        } else {
            bytes.append(contentsOf: [0x66, 0x61, 0x6C, 0x73, 0x65])
        }
    }

    mutating func bool(_ value: Bool?) {
        if let value { bool(value) } else { null() }
    }

    mutating func strings(_ values: [String]) {
        beginArray()
        for value in values {
            element()
            string(value)
        }
        endArray()
    }

    /// A `[String: [String]]` with its keys sorted.
    mutating func stringLists(_ values: [String: [String]]) {
        beginObject()
        for name in values.keys.sorted() {
            key(escaping: name)
            strings(values[name] ?? [])
        }
        endObject()
    }

    /// A `[String: String]` with its keys sorted, or `null`.
    mutating func stringMap(_ values: [String: String]?) {
        guard let values else { return null() }
        beginObject()
        for name in values.keys.sorted() {
            key(escaping: name)
            string(values[name] ?? "")
        }
        endObject()
    }

    mutating func value<T: DirectJSONWritable>(_ value: T?) throws {
        if let value { try value.writeJSON(to: &self) } else { null() }
    }

    mutating func values<T: DirectJSONWritable>(_ values: [T]) throws {
        beginArray()
        for value in values {
            element()
            try value.writeJSON(to: &self)
        }
        endArray()
    }

    /// A value of a type without a direct form, through ``ReportJSONWriter``'s `Encodable` path,
    /// placed at this position.
    mutating func encoded<T: Encodable>(_ value: T) throws {
        let sink = JSONByteSink(pretty: pretty)
        try sink.encodeRoot(value, depth: nextDepth)
        bytes.append(contentsOf: sink.bytes)
    }
}

// MARK: - Findings (the records of the run write theirs in Fetching/RecordJSON.swift)

extension Finding: DirectJSONWritable {
    func writeJSON(to out: inout DirectJSON) {
        out.beginObject()
        out.key("code"); out.string(code)
        out.key("severity"); out.string(severity.rawValue)
        out.key("message"); out.string(message)
        out.key("location"); out.string(location)
        out.key("line"); out.int(line)
        out.key("column"); out.int(column)
        out.key("fix"); out.string(fix)
        out.endObject()
    }
}
