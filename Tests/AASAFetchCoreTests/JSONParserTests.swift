import AASAFetchCore
import Foundation
import Testing

struct JSONParserTests {
    struct ErrorCase: Sendable, CustomStringConvertible {
        var input: [UInt8]
        var kind: JSONSyntaxError.Kind
        var line: Int
        var column: Int
        var description: String { "\(String(decoding: input, as: UTF8.self).debugDescription) → \(kind.rawValue) \(line):\(column)" }

        init(_ text: String, _ kind: JSONSyntaxError.Kind, _ line: Int, _ column: Int) {
            self.init(bytes: Array(text.utf8), kind, line, column)
        }

        init(bytes: [UInt8], _ kind: JSONSyntaxError.Kind, _ line: Int, _ column: Int) {
            self.input = bytes
            self.kind = kind
            self.line = line
            self.column = column
        }
    }

    static let errorCases: [ErrorCase] = [
        // Trailing commas, in arrays and objects, on later lines, CRLF and lone CR line ends.
        ErrorCase("[1,]", .trailingComma, 1, 4),
        ErrorCase("{\"a\":1,}", .trailingComma, 1, 8),
        ErrorCase("{\n  \"a\": [\n    1,\n  ]\n}", .trailingComma, 4, 3),
        ErrorCase("{\r\n\"a\":1,\r\n}", .trailingComma, 3, 1),
        ErrorCase("[\r1,]", .trailingComma, 2, 3),
        // Comments.
        ErrorCase("{\"a\":1 // note\n}", .comment, 1, 8),
        ErrorCase("/* x */ {}", .comment, 1, 1),
        ErrorCase("{} // end", .comment, 1, 4),
        ErrorCase("{\n  // note\n  \"a\": 1}", .comment, 2, 3),
        // Quotes and keys.
        ErrorCase("{'a':1}", .singleQuote, 1, 2),
        ErrorCase("['a']", .singleQuote, 1, 2),
        ErrorCase("{a:1}", .unquotedKey, 1, 2),
        ErrorCase("{1:1}", .unquotedKey, 1, 2),
        // Control characters and escapes in strings.
        ErrorCase(bytes: Array("[\"a".utf8) + [0x01] + Array("\"]".utf8), .controlCharacter, 1, 4),
        ErrorCase("[\"a\nb\"]", .controlCharacter, 1, 4),
        ErrorCase("[\"a\tb\"]", .controlCharacter, 1, 4),
        ErrorCase("[\"\\x\"]", .invalidEscape, 1, 3),
        ErrorCase("[\"ab\\'\"]", .invalidEscape, 1, 5),
        ErrorCase("[\"\\u12G4\"]", .invalidEscape, 1, 3),
        ErrorCase("[\"\\uD800\"]", .loneSurrogate, 1, 3),
        ErrorCase("[\"\\uDC00\"]", .loneSurrogate, 1, 3),
        ErrorCase("[\"x\\uD83D\\u0041\"]", .loneSurrogate, 1, 4),
        // Numbers.
        ErrorCase("[01]", .invalidNumber, 1, 2),
        ErrorCase("[-01]", .invalidNumber, 1, 2),
        ErrorCase("[1.]", .invalidNumber, 1, 4),
        ErrorCase("[-]", .invalidNumber, 1, 3),
        ErrorCase("[.5]", .invalidNumber, 1, 2),
        ErrorCase("[+1]", .invalidNumber, 1, 2),
        ErrorCase("[1e]", .invalidNumber, 1, 4),
        ErrorCase("[1e+]", .invalidNumber, 1, 5),
        ErrorCase("[NaN]", .nonFiniteNumber, 1, 2),
        ErrorCase("[Infinity]", .nonFiniteNumber, 1, 2),
        ErrorCase("[-Infinity]", .nonFiniteNumber, 1, 2),
        // Literals.
        ErrorCase("[True]", .invalidLiteral, 1, 2),
        ErrorCase("{\"a\": None}", .invalidLiteral, 1, 7),
        ErrorCase("[nul]", .invalidLiteral, 1, 2),
        ErrorCase("[truex]", .invalidLiteral, 1, 2),
        // Separators and structure.
        ErrorCase("{\"a\" 1}", .missingSeparator, 1, 6),
        ErrorCase("[1 2]", .missingSeparator, 1, 4),
        ErrorCase("{\"a\":1 \"b\":2}", .missingSeparator, 1, 8),
        ErrorCase("{} x", .trailingGarbage, 1, 4),
        ErrorCase("{}}", .trailingGarbage, 1, 3),
        ErrorCase("{}\n\n  [", .trailingGarbage, 3, 3),
        ErrorCase("[,1]", .unexpectedCharacter, 1, 2),
        ErrorCase("<html><body>{}</body></html>", .unexpectedCharacter, 1, 1),
        ErrorCase("hello", .unexpectedCharacter, 1, 1),
        // Empty and truncated input.
        ErrorCase("", .emptyInput, 1, 1),
        ErrorCase("  \n ", .emptyInput, 2, 2),
        ErrorCase(bytes: [0xEF, 0xBB, 0xBF], .emptyInput, 1, 1),
        ErrorCase("{\"a\":", .unexpectedEnd, 1, 6),
        ErrorCase("[1,", .unexpectedEnd, 1, 4),
        ErrorCase("[\"abc", .unexpectedEnd, 1, 6),
        ErrorCase("{", .unexpectedEnd, 1, 2),
        // Invalid UTF-8: stray byte, overlong form, encoded surrogate, truncated sequence, outside strings.
        ErrorCase(bytes: Array("[\"".utf8) + [0xFF] + Array("\"]".utf8), .invalidUTF8, 1, 3),
        ErrorCase(bytes: Array("[\"".utf8) + [0xC0, 0xAF] + Array("\"]".utf8), .invalidUTF8, 1, 3),
        ErrorCase(bytes: Array("[\"".utf8) + [0xED, 0xA0, 0x80] + Array("\"]".utf8), .invalidUTF8, 1, 3),
        ErrorCase(bytes: Array("[\"é".utf8) + [0xE2, 0x82] + Array("\"]".utf8), .invalidUTF8, 1, 4),
        ErrorCase(bytes: [0x5B, 0x80, 0x5D], .invalidUTF8, 1, 2),
        // Columns count characters, not bytes; a BOM is not a column.
        ErrorCase("{\"é€𝄞\": x}", .unexpectedCharacter, 1, 9),
        ErrorCase(bytes: [0xEF, 0xBB, 0xBF] + Array("[x]".utf8), .unexpectedCharacter, 1, 2),
    ]

    @Test(arguments: errorCases)
    func syntaxErrors(_ c: ErrorCase) {
        do {
            _ = try JSONParser.parse(c.input)
            Issue.record("expected \(c.kind) at \(c.line):\(c.column)")
        } catch {
            #expect(error.kind == c.kind, "\(error.message)")
            #expect(error.line == c.line)
            #expect(error.column == c.column)
            #expect(!error.message.isEmpty)
            #expect(JSONParser.position(of: error.offset, in: c.input).line == c.line)
        }
    }

    @Test func errorCarriesExcerptAndOffset() throws {
        let input = Array("{\n  \"applinks\": {\"details\": [1, 2,]}\n}".utf8)
        let error = try #require(throws: JSONSyntaxError.self) { try JSONParser.parse(input) }
        #expect(error.kind == .trailingComma)
        #expect(error.line == 2)
        #expect(error.column == 33)
        #expect(error.offset == 34)
        #expect(input[error.offset] == UInt8(ascii: "]"))
        #expect(error.excerpt == "…" + "\"applinks\": {\"details\": [1, 2,]}")
        #expect(error.message.contains("2:32"))
    }

    @Test func excerptIsShortOnLongLines() throws {
        let input = Array(("[" + String(repeating: "1,", count: 100) + "x]").utf8)
        let error = try #require(throws: JSONSyntaxError.self) { try JSONParser.parse(input) }
        #expect(error.column == 202)
        #expect(error.excerpt == "…" + String(repeating: "1,", count: 15) + "x]")
    }

    @Test func nestingLimit() throws {
        let deep = Array((String(repeating: "[", count: 300) + String(repeating: "]", count: 300)).utf8)
        let error = try #require(throws: JSONSyntaxError.self) { try JSONParser.parse(deep) }
        #expect(error.kind == .tooDeep)
        #expect(error.column == 257)
        let ok = Array((String(repeating: "[", count: 256) + String(repeating: "]", count: 256)).utf8)
        #expect(throws: Never.self) { try JSONParser.parse(ok) }
        // Hostile depth far beyond the stack must still be an error, not a crash.
        let hostile = Array(repeating: UInt8(ascii: "["), count: 1_000_000)
        #expect(throws: JSONSyntaxError.self) { try JSONParser.parse(hostile) }
    }

    @Test func valuesAndPositions() throws {
        let text = "\u{FEFF}{\n  \"a\": [true, false, null],\n  \"é\": -12.5e+3,\n  \"s\": \"x\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\uD83D\\uDE00\\u0000\"\n}"
        let document = try JSONParser.parse(Array(text.utf8))
        #expect(document.hadBOM)
        let root = document.root
        #expect(root.position == JSONPosition(line: 1, column: 1, offset: 3))
        let members = try #require(root.objectMembers)
        #expect(members.map(\.key) == ["a", "é", "s"])
        #expect(members[0].keyPosition == JSONPosition(line: 2, column: 3, offset: 7))
        let array = try #require(members[0].value.arrayValue)
        #expect(array.map(\.kind) == [.bool(true), .bool(false), .null])
        #expect(array[1].position == JSONPosition(line: 2, column: 15, offset: 19))
        guard case .number(let number) = members[1].value.kind else {
            Issue.record("not a number")
            return
        }
        #expect(number.text == "-12.5e+3")
        #expect(number.value == -12500)
        #expect(members[1].value.position.line == 3)
        #expect(members[1].value.position.column == 8)
        #expect(members[2].value.stringValue == "x\"\\/\u{8}\u{C}\n\r\té😀\u{0}")
    }

    @Test func duplicateKeysAreKeptInOrder() throws {
        let root = try JSONParser.parse(Array(#"{"a":1,"b":2,"a":3}"#.utf8)).root
        #expect(root.objectMembers?.map(\.key) == ["a", "b", "a"])
        guard case .number(let n) = root.member("a")?.value.kind else {
            Issue.record("no a")
            return
        }
        #expect(n.text == "3")
        #expect(root.uniqueMembers.map(\.key) == ["a", "b"])
    }

    @Test func acceptsEveryValidTopLevel() throws {
        for text in ["0", "-0", "1E5", "0.5e-3", "\"\"", "true", "null", "[]", "{}", " [ ] ", "123456789012345678901234567890"] {
            #expect(throws: Never.self, "\(text)") { try JSONParser.parse(Array(text.utf8)) }
        }
        #expect(try JSONParser.parse(Array("1e400".utf8)).root.kind == .number(JSONNumber(text: "1e400", value: .infinity)))
    }

    @Test func jsonPointers() throws {
        let root = try JSONParser.parse(Array(#"{"a/b":{"m~n":[10,{"/":"x"}]}}"#.utf8)).root
        #expect(root.value(at: "/a~1b/m~0n/1/~1")?.stringValue == "x")
        #expect(root.value(at: "") == root)
        #expect(root.value(at: "/a~1b/m~0n/01") == nil)
        #expect(root.value(at: "/nope") == nil)
        #expect(JSONPointer.escape("a~/b") == "a~0~1b")
        #expect(JSONPointer.unescape("a~0~1b") == "a~/b")
        #expect(JSONPointer.unescape("~01") == "~1")
    }

    /// A 128 KiB file on one line with thousands of values: no quadratic behaviour.
    @Test func largeSingleLineFileIsFast() throws {
        var text = #"{"applinks":{"details":[{"appIDs":["ABCDE12345.com.example.app"],"components":["#
        var i = 0
        while text.utf8.count < 128 * 1024 - 100 {
            text += #"{"/":"/path/\#(i)/*","?":{"q":"é\u00e9"},"comment":"rule \#(i)"},"#
            i += 1
        }
        text += #"{"/":"/end"}]}]}}"#
        let bytes = Array(text.utf8)
        let clock = ContinuousClock()
        let elapsed = try clock.measure {
            let document = try JSONParser.parse(bytes)
            #expect(document.root.value(at: "/applinks/details/0/components/\(i)/~1")?.position.line == 1)
        }
        #expect(elapsed < .seconds(1))
    }
}
