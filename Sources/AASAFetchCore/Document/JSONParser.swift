/// A strict RFC 8259 JSON parser over raw bytes that keeps exact source positions.
///
/// Everything RFC 8259 forbids is an error with its line and column: trailing commas, comments,
/// single quotes, unquoted keys, raw control characters in strings, undefined escapes, lone
/// surrogates, leading zeros, `NaN`/`Infinity`, text after the value, empty input and invalid
/// UTF-8. A leading UTF-8 BOM is accepted and reported through ``JSONDocument/hadBOM``.
/// Nesting deeper than `maxDepth` arrays/objects is an error, so hostile input cannot exhaust
/// the stack. Objects keep duplicate keys in source order.
public enum JSONParser {
    /// The default nesting limit.
    public static let defaultMaxDepth = 256

    /// Parses a complete JSON text.
    public static func parse(_ bytes: [UInt8], maxDepth: Int = defaultMaxDepth) throws(JSONSyntaxError) -> JSONDocument {
        let result: Result<JSONDocument, JSONSyntaxError> = bytes.withUnsafeBufferPointer { buffer in
            var scanner = JSONScanner(bytes: buffer, original: bytes, maxDepth: max(1, maxDepth))
            do throws(JSONSyntaxError) {
                return .success(try scanner.parseDocument())
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// The line and column of a byte offset in `bytes`, counted the way the parser counts them.
    public static func position(of offset: Int, in bytes: [UInt8]) -> JSONPosition {
        JSONScanner.locate(offset, in: bytes)
    }
}

private enum Byte {
    static let quote: UInt8 = 0x22, backslash: UInt8 = 0x5C, slash: UInt8 = 0x2F
    static let openBrace: UInt8 = 0x7B, closeBrace: UInt8 = 0x7D
    static let openBracket: UInt8 = 0x5B, closeBracket: UInt8 = 0x5D
    static let comma: UInt8 = 0x2C, colon: UInt8 = 0x3A, minus: UInt8 = 0x2D, plus: UInt8 = 0x2B
    static let dot: UInt8 = 0x2E, zero: UInt8 = 0x30, nine: UInt8 = 0x39
    static let space: UInt8 = 0x20, tab: UInt8 = 0x09, lf: UInt8 = 0x0A, cr: UInt8 = 0x0D
    static let star: UInt8 = 0x2A, apostrophe: UInt8 = 0x27, lessThan: UInt8 = 0x3C
    static let lowerE: UInt8 = 0x65, upperE: UInt8 = 0x45

    static let literals: [([UInt8], JSONValue.Kind)] = [
        (Array("true".utf8), .bool(true)), (Array("false".utf8), .bool(false)), (Array("null".utf8), .null),
    ]

    static func isDigit(_ b: UInt8) -> Bool { b >= zero && b <= nine }
    static func isWordByte(_ b: UInt8) -> Bool {
        (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || isDigit(b) || b == 0x5F || b == 0x24
    }
}

struct JSONScanner {
    /// The input, read through a buffer pointer in the hot loops (no retain/release per access).
    let bytes: UnsafeBufferPointer<UInt8>
    /// The same input as an array, for error positions.
    let original: [UInt8]
    let maxDepth: Int
    let count: Int
    var index = 0
    var bomLength = 0
    var line = 1
    var lineStart = 0
    // Incremental column cache: the column of byte `cacheOffset` on the current line.
    var cacheOffset = 0
    var cacheColumn = 1

    init(bytes: UnsafeBufferPointer<UInt8>, original: [UInt8], maxDepth: Int) {
        self.bytes = bytes
        self.original = original
        self.maxDepth = maxDepth
        self.count = bytes.count
    }

    // MARK: Document

    mutating func parseDocument() throws(JSONSyntaxError) -> JSONDocument {
        if count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF {
            bomLength = 3
            index = 3
            lineStart = 3
            cacheOffset = 3
        }
        skipWhitespace()
        guard index < count else {
            throw error(.emptyInput, at: index, "empty input: expected a JSON value")
        }
        let root = try parseValue(depth: 0)
        skipWhitespace()
        if index < count {
            if let comment = commentError(at: index) { throw comment }
            throw error(.trailingGarbage, at: index, "unexpected \(describe(at: index)) after the end of the JSON value")
        }
        return JSONDocument(root: root, hadBOM: bomLength > 0)
    }

    // MARK: Positions

    /// The position of `offset`, which must be on the current line and not before the last one asked.
    mutating func position(_ offset: Int) -> JSONPosition {
        if cacheOffset < lineStart {
            cacheOffset = lineStart
            cacheColumn = 1
        }
        var column = cacheColumn
        var i = cacheOffset
        while i < offset {
            if bytes[i] & 0xC0 != 0x80 { column += 1 }
            i += 1
        }
        cacheOffset = offset
        cacheColumn = column
        return JSONPosition(line: line, column: column, offset: offset)
    }

    /// The position of any offset, computed from the start of the input.
    static func locate(_ offset: Int, in bytes: [UInt8]) -> JSONPosition {
        let end = min(max(offset, 0), bytes.count)
        var line = 1
        var column = 1
        var i = 0
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF, end >= 3 { i = 3 }
        while i < end {
            let b = bytes[i]
            if b == Byte.lf {
                line += 1
                column = 1
            } else if b == Byte.cr {
                if i + 1 < bytes.count, bytes[i + 1] == Byte.lf {
                    // The following LF ends the line.
                } else {
                    line += 1
                    column = 1
                }
            } else if b & 0xC0 != 0x80 {
                column += 1
            }
            i += 1
        }
        return JSONPosition(line: line, column: column, offset: end)
    }

    // MARK: Whitespace

    mutating func skipWhitespace() {
        while index < count {
            let b = bytes[index]
            if b == Byte.space || b == Byte.tab {
                index += 1
            } else if b == Byte.lf {
                index += 1
                line += 1
                lineStart = index
            } else if b == Byte.cr {
                index += 1
                if index < count, bytes[index] == Byte.lf { continue }
                line += 1
                lineStart = index
            } else {
                return
            }
        }
    }

    // MARK: Values

    mutating func parseValue(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        guard index < count else {
            throw error(.unexpectedEnd, at: index, "unexpected end of input: expected a value")
        }
        let b = bytes[index]
        switch b {
        case Byte.openBrace:
            return try parseObject(depth: depth + 1)
        case Byte.openBracket:
            return try parseArray(depth: depth + 1)
        case Byte.quote:
            let pos = position(index)
            return JSONValue(.string(try parseString()), at: pos)
        case Byte.minus, Byte.zero...Byte.nine:
            return try parseNumber()
        default:
            if b == 0x74 || b == 0x66 || b == 0x6E {  // t f n
                if let literal = try parseLiteral() { return literal }
            }
            throw valueStartError(at: index, expected: "a value")
        }
    }

    mutating func parseLiteral() throws(JSONSyntaxError) -> JSONValue? {
        for (word, kind) in Byte.literals where matches(word, at: index) {
            let end = index + word.count
            if end < count, Byte.isWordByte(bytes[end]) { return nil }
            let pos = position(index)
            index = end
            return JSONValue(kind, at: pos)
        }
        return nil
    }

    func matches(_ word: [UInt8], at offset: Int) -> Bool {
        guard offset + word.count <= count else { return false }
        for k in 0..<word.count where bytes[offset + k] != word[k] { return false }
        return true
    }

    mutating func parseObject(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        if depth > maxDepth {
            throw error(.tooDeep, at: index, "nesting deeper than \(maxDepth) arrays and objects")
        }
        let pos = position(index)
        index += 1
        skipWhitespace()
        if index < count, bytes[index] == Byte.closeBrace {
            index += 1
            return JSONValue(.object([]), at: pos)
        }
        var members: [JSONMember] = []
        members.reserveCapacity(4)
        var commaOffset: Int?
        while true {
            skipWhitespace()
            guard index < count else {
                throw error(.unexpectedEnd, at: index, "unexpected end of input inside an object: expected a key")
            }
            let k = bytes[index]
            if k != Byte.quote {
                if k == Byte.closeBrace, let comma = commaOffset {
                    let c = Self.locate(comma, in: original)
                    throw error(.trailingComma, at: index, "trailing comma before '}' (the comma at \(c.line):\(c.column) must go)")
                }
                if let e = commentError(at: index) { throw e }
                if k == Byte.apostrophe {
                    throw error(.singleQuote, at: index, "object keys must be in double quotes, not single quotes")
                }
                if Byte.isWordByte(k) {
                    let word = wordText(at: index)
                    throw error(.unquotedKey, at: index, "object key '\(word)' must be a string in double quotes")
                }
                throw nonValueError(at: index, "expected a string key in double quotes, found \(describe(at: index))")
            }
            let keyPos = position(index)
            let key = try parseString()
            skipWhitespace()
            guard index < count, bytes[index] == Byte.colon else {
                if index >= count {
                    throw error(.unexpectedEnd, at: index, "unexpected end of input: expected ':' after key \"\(key)\"")
                }
                if let e = commentError(at: index) { throw e }
                throw nonValueError(at: index, "expected ':' after key \"\(key)\", found \(describe(at: index))", kind: .missingSeparator)
            }
            index += 1
            skipWhitespace()
            let value = try parseValue(depth: depth)
            members.append(JSONMember(key: key, keyPosition: keyPos, value: value))
            skipWhitespace()
            guard index < count else {
                throw error(.unexpectedEnd, at: index, "unexpected end of input inside an object: expected ',' or '}'")
            }
            let next = bytes[index]
            if next == Byte.comma {
                commaOffset = index
                index += 1
            } else if next == Byte.closeBrace {
                index += 1
                return JSONValue(.object(members), at: pos)
            } else {
                if let e = commentError(at: index) { throw e }
                throw nonValueError(at: index, "expected ',' or '}' after an object member, found \(describe(at: index))", kind: .missingSeparator)
            }
        }
    }

    mutating func parseArray(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        if depth > maxDepth {
            throw error(.tooDeep, at: index, "nesting deeper than \(maxDepth) arrays and objects")
        }
        let pos = position(index)
        index += 1
        skipWhitespace()
        if index < count, bytes[index] == Byte.closeBracket {
            index += 1
            return JSONValue(.array([]), at: pos)
        }
        var elements: [JSONValue] = []
        elements.reserveCapacity(4)
        var commaOffset: Int?
        while true {
            skipWhitespace()
            if index < count, bytes[index] == Byte.closeBracket, let comma = commaOffset {
                let c = Self.locate(comma, in: original)
                throw error(.trailingComma, at: index, "trailing comma before ']' (the comma at \(c.line):\(c.column) must go)")
            }
            elements.append(try parseValue(depth: depth))
            skipWhitespace()
            guard index < count else {
                throw error(.unexpectedEnd, at: index, "unexpected end of input inside an array: expected ',' or ']'")
            }
            let next = bytes[index]
            if next == Byte.comma {
                commaOffset = index
                index += 1
            } else if next == Byte.closeBracket {
                index += 1
                return JSONValue(.array(elements), at: pos)
            } else {
                if let e = commentError(at: index) { throw e }
                throw nonValueError(at: index, "expected ',' or ']' after an array element, found \(describe(at: index))", kind: .missingSeparator)
            }
        }
    }

    // MARK: Strings

    /// Parses a string starting at the opening quote at `index`.
    mutating func parseString() throws(JSONSyntaxError) -> String {
        let start = index + 1
        var j = start
        while j < count {
            let b = bytes[j]
            if b == Byte.quote {
                index = j + 1
                return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<j]), as: UTF8.self)
            } else if b == Byte.backslash {
                return try parseEscapedString(start: start, from: j)
            } else if b < 0x20 {
                throw controlCharacterError(at: j)
            } else if b >= 0x80 {
                guard let length = Self.utf8SequenceLength(bytes, at: j) else {
                    throw error(.invalidUTF8, at: j, "invalid UTF-8 byte 0x\(hex(b)) inside a string")
                }
                j += length
            } else {
                j += 1
            }
        }
        throw error(.unexpectedEnd, at: count, "unexpected end of input inside a string (missing closing quote)")
    }

    mutating func parseEscapedString(start: Int, from escapeStart: Int) throws(JSONSyntaxError) -> String {
        var buffer = Array(bytes[start..<escapeStart])
        var j = escapeStart
        while j < count {
            let b = bytes[j]
            if b == Byte.quote {
                index = j + 1
                return String(decoding: buffer, as: UTF8.self)
            } else if b == Byte.backslash {
                guard j + 1 < count else {
                    throw error(.unexpectedEnd, at: count, "unexpected end of input inside a string escape")
                }
                let e = bytes[j + 1]
                switch e {
                case Byte.quote, Byte.backslash, Byte.slash: buffer.append(e)
                case 0x62: buffer.append(0x08)  // b
                case 0x66: buffer.append(0x0C)  // f
                case 0x6E: buffer.append(0x0A)  // n
                case 0x72: buffer.append(0x0D)  // r
                case 0x74: buffer.append(0x09)  // t
                case 0x75:  // u
                    let (scalar, length) = try parseUnicodeEscape(at: j)
                    appendUTF8(scalar, to: &buffer)
                    j += length
                    continue
                default:
                    let shown = e >= 0x20 && e < 0x7F ? "\\" + String(UnicodeScalar(e)) : "\\ followed by byte 0x\(hex(e))"
                    throw error(.invalidEscape, at: j, "invalid escape '\(shown)' in a string (JSON allows \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)")
                }
                j += 2
            } else if b < 0x20 {
                throw controlCharacterError(at: j)
            } else if b >= 0x80 {
                guard let length = Self.utf8SequenceLength(bytes, at: j) else {
                    throw error(.invalidUTF8, at: j, "invalid UTF-8 byte 0x\(hex(b)) inside a string")
                }
                buffer.append(contentsOf: bytes[j..<(j + length)])
                j += length
            } else {
                buffer.append(b)
                j += 1
            }
        }
        throw error(.unexpectedEnd, at: count, "unexpected end of input inside a string (missing closing quote)")
    }

    /// Parses `\uXXXX` (and a following low surrogate escape) at `offset`; returns the scalar
    /// value and the number of bytes consumed.
    func parseUnicodeEscape(at offset: Int) throws(JSONSyntaxError) -> (UInt32, Int) {
        guard let high = hex4(at: offset + 2) else {
            throw error(.invalidEscape, at: offset, "invalid \\u escape: expected four hexadecimal digits")
        }
        if high >= 0xDC00 && high <= 0xDFFF {
            throw error(.loneSurrogate, at: offset, "lone low surrogate \\u\(hex4String(high)) in a string")
        }
        guard high >= 0xD800 && high <= 0xDBFF else { return (high, 6) }
        guard offset + 7 < count, bytes[offset + 6] == Byte.backslash, bytes[offset + 7] == 0x75,
            let low = hex4(at: offset + 8), low >= 0xDC00 && low <= 0xDFFF
        else {
            throw error(.loneSurrogate, at: offset, "high surrogate \\u\(hex4String(high)) is not followed by a low surrogate \\uDC00–\\uDFFF")
        }
        return (0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00), 12)
    }

    func hex4(at offset: Int) -> UInt32? {
        guard offset + 4 <= count else { return nil }
        var value: UInt32 = 0
        for k in 0..<4 {
            let c = bytes[offset + k]
            let digit: UInt32
            switch c {
            case 0x30...0x39: digit = UInt32(c - 0x30)
            case 0x41...0x46: digit = UInt32(c - 0x41 + 10)
            case 0x61...0x66: digit = UInt32(c - 0x61 + 10)
            default: return nil
            }
            value = value << 4 | digit
        }
        return value
    }

    func appendUTF8(_ value: UInt32, to buffer: inout [UInt8]) {
        switch value {
        case 0..<0x80:
            buffer.append(UInt8(value))
        case 0x80..<0x800:
            buffer.append(UInt8(0xC0 | (value >> 6)))
            buffer.append(UInt8(0x80 | (value & 0x3F)))
        case 0x800..<0x10000:
            buffer.append(UInt8(0xE0 | (value >> 12)))
            buffer.append(UInt8(0x80 | ((value >> 6) & 0x3F)))
            buffer.append(UInt8(0x80 | (value & 0x3F)))
        default:
            buffer.append(UInt8(0xF0 | (value >> 18)))
            buffer.append(UInt8(0x80 | ((value >> 12) & 0x3F)))
            buffer.append(UInt8(0x80 | ((value >> 6) & 0x3F)))
            buffer.append(UInt8(0x80 | (value & 0x3F)))
        }
    }

    /// The length of the well-formed UTF-8 sequence at `offset` (Unicode table 3-7), or `nil`.
    static func utf8SequenceLength<Bytes: RandomAccessCollection<UInt8>>(_ bytes: Bytes, at offset: Int) -> Int? where Bytes.Index == Int {
        let b0 = bytes[offset]
        let n = bytes.count
        func cont(_ k: Int, _ lo: UInt8 = 0x80, _ hi: UInt8 = 0xBF) -> Bool {
            offset + k < n && bytes[offset + k] >= lo && bytes[offset + k] <= hi
        }
        switch b0 {
        case 0x00...0x7F: return 1
        case 0xC2...0xDF: return cont(1) ? 2 : nil
        case 0xE0: return cont(1, 0xA0) && cont(2) ? 3 : nil
        case 0xE1...0xEC, 0xEE...0xEF: return cont(1) && cont(2) ? 3 : nil
        case 0xED: return cont(1, 0x80, 0x9F) && cont(2) ? 3 : nil
        case 0xF0: return cont(1, 0x90) && cont(2) && cont(3) ? 4 : nil
        case 0xF1...0xF3: return cont(1) && cont(2) && cont(3) ? 4 : nil
        case 0xF4: return cont(1, 0x80, 0x8F) && cont(2) && cont(3) ? 4 : nil
        default: return nil
        }
    }

    // MARK: Numbers

    mutating func parseNumber() throws(JSONSyntaxError) -> JSONValue {
        let start = index
        var j = index
        if bytes[j] == Byte.minus {
            j += 1
            if j < count, bytes[j] == 0x49, matches(Array("Infinity".utf8), at: j) {
                throw error(.nonFiniteNumber, at: start, "-Infinity is not a JSON number")
            }
        }
        guard j < count, Byte.isDigit(bytes[j]) else {
            throw error(.invalidNumber, at: j, "expected a digit after '-' in a number")
        }
        if bytes[j] == Byte.zero {
            j += 1
            if j < count, Byte.isDigit(bytes[j]) {
                throw error(.invalidNumber, at: start, "numbers must not have leading zeros")
            }
        } else {
            while j < count, Byte.isDigit(bytes[j]) { j += 1 }
        }
        if j < count, bytes[j] == Byte.dot {
            j += 1
            guard j < count, Byte.isDigit(bytes[j]) else {
                throw error(.invalidNumber, at: j, "expected a digit after the decimal point")
            }
            while j < count, Byte.isDigit(bytes[j]) { j += 1 }
        }
        if j < count, bytes[j] == Byte.lowerE || bytes[j] == Byte.upperE {
            j += 1
            if j < count, bytes[j] == Byte.plus || bytes[j] == Byte.minus { j += 1 }
            guard j < count, Byte.isDigit(bytes[j]) else {
                throw error(.invalidNumber, at: j, "expected a digit in the exponent")
            }
            while j < count, Byte.isDigit(bytes[j]) { j += 1 }
        }
        let pos = position(start)
        let text = String(decoding: bytes[start..<j], as: UTF8.self)
        index = j
        return JSONValue(.number(JSONNumber(text: text, value: Double(text) ?? .nan)), at: pos)
    }

    // MARK: Error helpers

    func error(_ kind: JSONSyntaxError.Kind, at offset: Int, _ message: String) -> JSONSyntaxError {
        let p = Self.locate(offset, in: original)
        return JSONSyntaxError(
            kind: kind, line: p.line, column: p.column, offset: p.offset, message: message, excerpt: excerpt(at: offset))
    }

    func controlCharacterError(at offset: Int) -> JSONSyntaxError {
        let b = bytes[offset]
        if b == Byte.lf || b == Byte.cr {
            return error(.controlCharacter, at: offset, "line break inside a string (missing closing quote, or write \\n)")
        }
        if b == Byte.tab {
            return error(.controlCharacter, at: offset, "raw tab character inside a string (write \\t)")
        }
        return error(.controlCharacter, at: offset, "control character U+00\(hex(b)) inside a string (write \\u00\(hex(b)))")
    }

    /// A comment error when `offset` starts `//` or `/*`.
    func commentError(at offset: Int) -> JSONSyntaxError? {
        guard offset + 1 < count, bytes[offset] == Byte.slash,
            bytes[offset + 1] == Byte.slash || bytes[offset + 1] == Byte.star
        else { return nil }
        return error(.comment, at: offset, "comments are not allowed in JSON")
    }

    /// The error for a byte that cannot start a value.
    func valueStartError(at offset: Int, expected: String) -> JSONSyntaxError {
        let b = bytes[offset]
        if let e = commentError(at: offset) { return e }
        switch b {
        case Byte.apostrophe:
            return error(.singleQuote, at: offset, "strings must be in double quotes, not single quotes")
        case Byte.plus, Byte.dot:
            return error(.invalidNumber, at: offset, "a number must start with a digit or '-'")
        case Byte.closeBracket, Byte.closeBrace, Byte.comma, Byte.colon:
            return error(.unexpectedCharacter, at: offset, "expected \(expected), found \(describe(at: offset))")
        case Byte.lessThan:
            return error(.unexpectedCharacter, at: offset, "expected \(expected), found '<' (this looks like HTML or XML, not JSON)")
        default:
            break
        }
        if Byte.isWordByte(b) {
            let word = wordText(at: offset)
            switch word {
            case "NaN", "Infinity":
                return error(.nonFiniteNumber, at: offset, "\(word) is not a JSON number")
            case "True", "TRUE", "tru", "ture":
                return error(.invalidLiteral, at: offset, "'\(word)' is not a JSON literal; write true")
            case "False", "FALSE", "flase", "fasle":
                return error(.invalidLiteral, at: offset, "'\(word)' is not a JSON literal; write false")
            case "Null", "NULL", "None", "nil", "nul", "undefined":
                return error(.invalidLiteral, at: offset, "'\(word)' is not a JSON literal; write null")
            default:
                if word.hasPrefix("true") || word.hasPrefix("false") || word.hasPrefix("null") {
                    return error(.invalidLiteral, at: offset, "'\(word)' is not a JSON literal")
                }
                return error(.unexpectedCharacter, at: offset, "expected \(expected), found unquoted text '\(word)'")
            }
        }
        return nonValueError(at: offset, "expected \(expected), found \(describe(at: offset))")
    }

    /// An error at a byte that is not what the grammar wants: invalid UTF-8 is reported as such.
    func nonValueError(at offset: Int, _ message: String, kind: JSONSyntaxError.Kind = .unexpectedCharacter) -> JSONSyntaxError {
        if offset < count, bytes[offset] >= 0x80, Self.utf8SequenceLength(bytes, at: offset) == nil {
            return error(.invalidUTF8, at: offset, "invalid UTF-8 byte 0x\(hex(bytes[offset]))")
        }
        return error(kind, at: offset, message)
    }

    /// `'x'` for the character at `offset`, or "end of input".
    func describe(at offset: Int) -> String {
        guard offset < count else { return "end of input" }
        let b = bytes[offset]
        if b < 0x20 || b == 0x7F { return "control character U+00\(hex(b))" }
        if b < 0x80 { return "'\(String(UnicodeScalar(b)))'" }
        guard let length = Self.utf8SequenceLength(bytes, at: offset) else { return "byte 0x\(hex(b))" }
        return "'\(String(decoding: bytes[offset..<(offset + length)], as: UTF8.self))'"
    }

    func wordText(at offset: Int) -> String {
        var j = offset
        while j < count, Byte.isWordByte(bytes[j]), j - offset < 40 { j += 1 }
        return String(decoding: bytes[offset..<j], as: UTF8.self)
    }

    /// Up to 30 characters either side of `offset` on its line, control characters shown as spaces.
    func excerpt(at offset: Int) -> String {
        let at = min(max(offset, 0), count)
        var start = at
        while start > bomLength, bytes[start - 1] != Byte.lf, bytes[start - 1] != Byte.cr { start -= 1 }
        var end = at
        while end < count, bytes[end] != Byte.lf, bytes[end] != Byte.cr { end += 1 }
        let before = Array(String(decoding: bytes[start..<at], as: UTF8.self).unicodeScalars)
        let after = Array(String(decoding: bytes[at..<end], as: UTF8.self).unicodeScalars)
        var text = String.UnicodeScalarView()
        if before.count > 30 { text.append("…") }
        for s in before.suffix(30) { text.append(s.value < 0x20 ? " " : s) }
        for s in after.prefix(30) { text.append(s.value < 0x20 ? " " : s) }
        if after.count > 30 { text.append("…") }
        return String(text)
    }

    func hex(_ b: UInt8) -> String {
        let digits = Array("0123456789ABCDEF".unicodeScalars)
        var s = String.UnicodeScalarView()
        s.append(digits[Int(b >> 4)])
        s.append(digits[Int(b & 0xF)])
        return String(s)
    }

    func hex4String(_ v: UInt32) -> String { hex(UInt8(v >> 8)) + hex(UInt8(v & 0xFF)) }
}
