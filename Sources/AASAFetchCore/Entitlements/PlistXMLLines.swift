/// Where the elements of one array of an XML property list start, by line: what lets CI
/// annotations point at an entitlement entry's `<string>` (Foundation's parser gives no positions).
///
/// A small scanner over the UTF-8 text, run only after the property list decoded: it walks the
/// tags (comments, CDATA, processing instructions and the DOCTYPE skipped, quoted attribute
/// values respected), finds the `<key>` of the top-level dictionary whose text is the key, and
/// returns the line of each element directly inside the `<array>` that follows it. Anything it
/// does not understand gives `nil` (no lines), never a wrong line: the caller also checks that it
/// found as many elements as the decoder did.
enum PlistXMLLines {
    /// The 1-based line of each element of the array stored under `key` in the top-level
    /// dictionary, or `nil` (not UTF-8 XML, no such key, not an array, a scan it cannot follow).
    static func elementLines(ofArrayFor key: String, in bytes: [UInt8]) -> [Int]? {
        guard !bytes.starts(with: [0xFE, 0xFF]), !bytes.starts(with: [0xFF, 0xFE]), !bytes.starts(with: Array("bplist".utf8)) else {
            return nil
        }
        var scanner = Scanner(bytes: bytes)
        return scanner.run(key: Array(key.utf8))
    }

    private struct Scanner {
        let bytes: [UInt8]
        var position = 0
        var line = 1
        /// Open element names.
        var stack: [ArraySlice<UInt8>] = []
        /// Depth of the top-level dictionary's children (its stack count plus one), once open.
        var dictionaryChildren: Int?
        /// The text of a top-level `<key>` being read.
        var keyText: [UInt8]?
        /// Whether the last top-level key was the one asked for.
        var matched = false
        /// Depth of the array's elements, while inside it.
        var arrayChildren: Int?
        var lines: [Int] = []
        /// The lines of the key's array, once read whole.
        var found: [Int]?

        init(bytes: [UInt8]) {
            self.bytes = bytes
        }

        func starts(with text: String) -> Bool {
            let pattern = Array(text.utf8)
            return bytes.count - position >= pattern.count && bytes[position..<position + pattern.count].elementsEqual(pattern)
        }

        /// Moves past `terminator`, counting lines; the bytes skipped (without it), or `nil` at the end.
        mutating func skip(past terminator: String) -> ArraySlice<UInt8>? {
            let pattern = Array(terminator.utf8)
            let start = position
            while position + pattern.count <= bytes.count {
                if bytes[position..<position + pattern.count].elementsEqual(pattern) {
                    let skipped = bytes[start..<position]
                    position += pattern.count
                    return skipped
                }
                if bytes[position] == 0x0A { line += 1 }
                position += 1
            }
            return nil
        }

        mutating func run(key: [UInt8]) -> [Int]? {
            while position < bytes.count {
                let byte = bytes[position]
                if byte != UInt8(ascii: "<") {
                    if byte == 0x0A { line += 1 }
                    keyText?.append(byte)
                    position += 1
                    continue
                }
                if starts(with: "<!--") {
                    position += 4
                    guard skip(past: "-->") != nil else { return nil }
                } else if starts(with: "<![CDATA[") {
                    position += 9
                    guard let text = skip(past: "]]>") else { return nil }
                    keyText?.append(contentsOf: Self.escaped(text))
                } else if starts(with: "<?") {
                    guard skip(past: "?>") != nil else { return nil }
                } else if starts(with: "<!") {
                    // The DOCTYPE (an internal subset would hold '>'; property lists have none).
                    guard skip(past: ">") != nil else { return nil }
                } else {
                    guard let done = tag(key: key) else { return nil }
                    if done {
                        // The key again (a dictionary with a duplicate key): which array the
                        // parser kept is not ours to guess, so no lines rather than wrong ones.
                        if found != nil { return nil }
                        found = lines
                        lines = []
                        arrayChildren = nil
                        matched = false
                    }
                }
            }
            return found
        }

        /// Text of a CDATA section as the key comparison sees entity-free text.
        static func escaped(_ text: ArraySlice<UInt8>) -> [UInt8] {
            Array(text.flatMap { byte -> [UInt8] in
                byte == UInt8(ascii: "&") ? Array("&amp;".utf8) : [byte]
            })
        }

        /// Reads one tag at `<`; `true` when the array was read whole, `nil` when the scan fails.
        mutating func tag(key: [UInt8]) -> Bool? {
            let tagLine = line
            position += 1
            let closing = position < bytes.count && bytes[position] == UInt8(ascii: "/")
            if closing { position += 1 }
            let nameStart = position
            while position < bytes.count, !Self.isNameEnd(bytes[position]) { position += 1 }
            let name = bytes[nameStart..<position]
            guard !name.isEmpty else { return nil }
            // To the end of the tag, past quoted values.
            var quote: UInt8?
            var selfClosing = false
            while true {
                guard position < bytes.count else { return nil }
                let byte = bytes[position]
                position += 1
                if byte == 0x0A { line += 1 }
                if let open = quote {
                    if byte == open { quote = nil }
                } else if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") {
                    quote = byte
                } else if byte == UInt8(ascii: ">") {
                    selfClosing = position >= 2 && bytes[position - 2] == UInt8(ascii: "/")
                    break
                }
            }
            if closing {
                guard stack.last.map({ $0.elementsEqual(name) }) == true else { return nil }
                stack.removeLast()
                if let children = dictionaryChildren, stack.count == children, name.elementsEqual("key".utf8), let text = keyText {
                    matched = Self.decodeEntities(text).elementsEqual(key)
                    keyText = nil
                }
                if let children = arrayChildren, stack.count == children - 1 { return true }
                return false
            }
            // An element opens (and closes at once when self-closing).
            if let children = arrayChildren, stack.count == children {
                lines.append(tagLine)
            } else if let children = dictionaryChildren, stack.count == children, arrayChildren == nil {
                if name.elementsEqual("key".utf8) {
                    if selfClosing { matched = key.isEmpty } else { keyText = [] }
                } else if matched {
                    guard name.elementsEqual("array".utf8) else { return nil }
                    if selfClosing { return true }
                    arrayChildren = stack.count + 1
                    matched = false
                } else {
                    matched = false
                }
            } else if dictionaryChildren == nil, name.elementsEqual("dict".utf8) {
                dictionaryChildren = stack.count + 1
                if selfClosing { return nil }
            }
            if !selfClosing { stack.append(name) }
            return false
        }

        static func isNameEnd(_ byte: UInt8) -> Bool {
            byte == UInt8(ascii: ">") || byte == UInt8(ascii: "/") || byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
        }

        /// The five predefined entities and numeric references, enough to compare a key.
        static func decodeEntities(_ text: [UInt8]) -> [UInt8] {
            guard text.contains(UInt8(ascii: "&")) else { return text }
            let string = String(decoding: text, as: UTF8.self)
            var result = ""
            var rest = Substring(string)
            while let amp = rest.firstIndex(of: "&") {
                result += rest[..<amp]
                guard let semicolon = rest[amp...].firstIndex(of: ";") else { break }
                let entity = rest[rest.index(after: amp)..<semicolon]
                switch entity {
                case "amp": result += "&"
                case "lt": result += "<"
                case "gt": result += ">"
                case "quot": result += "\""
                case "apos": result += "'"
                default:
                    let number = entity.hasPrefix("#x") ? UInt32(entity.dropFirst(2), radix: 16)
                        : entity.hasPrefix("#") ? UInt32(entity.dropFirst(), radix: 10) : nil
                    if let number, let scalar = Unicode.Scalar(number) { result.unicodeScalars.append(scalar) } else { result += "&\(entity);" }
                }
                rest = rest[rest.index(after: semicolon)...]
            }
            result += rest
            return Array(result.utf8)
        }
    }
}
