/// Trimming and searching on entry text without Foundation's bridged `NSString` calls, which took
/// about a third of the CPU of reading a long `--domains` list into the run spool.
public enum EntryText {
    /// Whether a scalar is in Foundation's `CharacterSet.whitespaces` (general category Zs,
    /// U+0009 and U+200B) or, with `newlines`, in `CharacterSet.whitespacesAndNewlines` (also U+000A to
    /// U+000D, U+0085, U+2028 and U+2029).
    static func isWhitespace(_ scalar: Unicode.Scalar, newlines: Bool) -> Bool {
        switch scalar.value {
        case 0x09, 0x200B: return true  // CoreFoundation counts ZERO WIDTH SPACE too
        case 0x0A...0x0D, 0x85, 0x2028, 0x2029: return newlines
        case 0x20: return true
        case 0..<0x80: return false
        default: return scalar.properties.generalCategory == .spaceSeparator
        }
    }

    /// `text` without leading and trailing white space, exactly as
    /// `trimmingCharacters(in: newlines ? .whitespacesAndNewlines : .whitespaces)` gives it.
    public static func trimmed(_ text: String, newlines: Bool = false) -> String {
        trimmed(text[...], newlines: newlines)
    }

    /// ``trimmed(_:newlines:)`` of any string type.
    @_disfavoredOverload
    public static func trimmed(_ text: some StringProtocol, newlines: Bool = false) -> String {
        trimmed(String(text)[...], newlines: newlines)
    }

    /// ``trimmed(_:newlines:)`` of a part of a string.
    public static func trimmed(_ text: Substring, newlines: Bool = false) -> String {
        let utf8 = text.utf8
        // Nothing to trim when both ends are printable ASCII (every line of a plain host list).
        if let first = utf8.first, let last = utf8.last, (0x21..<0x80).contains(first), (0x21..<0x80).contains(last) {
            return String(text)
        }
        let scalars = text.unicodeScalars
        guard let start = scalars.firstIndex(where: { !isWhitespace($0, newlines: newlines) }),
              let end = scalars.lastIndex(where: { !isWhitespace($0, newlines: newlines) })
        else { return "" }
        return String(scalars[start...end])
    }

    /// Whether `text` contains the ASCII string `needle`, compared byte by byte.
    public static func contains(_ text: some StringProtocol, ascii needle: StaticString) -> Bool {
        let pattern = UnsafeBufferPointer(start: needle.utf8Start, count: needle.utf8CodeUnitCount)
        guard let first = pattern.first else { return true }
        let bytes = Array(text.utf8)
        guard bytes.count >= pattern.count else { return false }
        var index = 0
        while index + pattern.count <= bytes.count {
            if bytes[index] == first, bytes[index..<index + pattern.count].elementsEqual(pattern) { return true }
            index += 1
        }
        return false
    }

    /// Whether `text` starts with the lower-case ASCII string `prefix`, ignoring ASCII case (what
    /// `text.lowercased().hasPrefix(prefix)` answers: no other character lower-cases to one of
    /// `prefix`'s letters).
    public static func hasPrefix(_ text: some StringProtocol, asciiIgnoringCase prefix: StaticString) -> Bool {
        let pattern = UnsafeBufferPointer(start: prefix.utf8Start, count: prefix.utf8CodeUnitCount)
        var bytes = text.utf8.makeIterator()
        for expected in pattern {
            guard var byte = bytes.next() else { return false }
            if (0x41...0x5A).contains(byte) { byte += 0x20 }
            guard byte == expected else { return false }
        }
        return true
    }

    /// The first index of `character` (an ASCII character other than CR and LF) in `text`, as
    /// `text.firstIndex(of: Character(character))` finds it. By bytes when `text` is ASCII: each
    /// byte is then a character of its own, so both searches agree; by characters otherwise (a
    /// combining mark after it makes another character).
    public static func firstIndex(of character: Unicode.Scalar, in text: String) -> String.Index? {
        guard isASCII(text) else { return text.firstIndex(of: Character(character)) }
        return text.utf8.firstIndex(of: UInt8(truncatingIfNeeded: character.value))
    }

    /// The last index of `character` in `text`, as ``firstIndex(of:in:)`` finds the first.
    public static func lastIndex(of character: Unicode.Scalar, in text: String) -> String.Index? {
        guard isASCII(text) else { return text.lastIndex(of: Character(character)) }
        return text.utf8.lastIndex(of: UInt8(truncatingIfNeeded: character.value))
    }

    /// Whether every byte of `text` is ASCII.
    public static func isASCII(_ text: some StringProtocol) -> Bool {
        text.utf8.allSatisfy { $0 < 0x80 }
    }
}
