import AASAFetchCore
import Foundation
import Testing

/// The one JSON encoding of every `--json` document.
struct ReportJSONWriterTests {
    struct Inner: Encodable {
        var name: String
        var count: Int?
    }

    struct Outer: Encodable {
        var schemaVersion = 1
        var zebra: String
        var apple: Int?
        var list: [Inner]
        var empty: [Int]
        var emptyObject: [String: Int]
        var map: [String: Int]
        var inner: Inner?
        var flag: Bool
        var when: Date
    }

    static let sample = Outer(
        zebra: "z", apple: nil, list: [Inner(name: "a", count: 1), Inner(name: "b", count: nil)], empty: [], emptyObject: [:],
        map: ["b": 2, "a": 1, "c": 3], inner: nil, flag: true, when: Date(timeIntervalSince1970: 1_795_456_800))

    @Test func absentValuesAreNullAndKeysKeepTheirDeclarationOrder() throws {
        let text = try ReportJSONWriter(style: .compact).string(Self.sample)
        #expect(text == #"{"schemaVersion":1,"zebra":"z","apple":null,"list":[{"name":"a","count":1},{"name":"b","count":null}],"empty":[],"emptyObject":{},"map":{"a":1,"b":2,"c":3},"inner":null,"flag":true,"when":"2026-11-23T18:00:00Z"}"#)
    }

    @Test func prettyLayoutIndentsTwoSpacesAndKeepsEmptyContainersOnOneLine() throws {
        let text = try ReportJSONWriter().string(Inner(name: "x", count: nil))
        #expect(text == "{\n  \"name\": \"x\",\n  \"count\": null\n}")
        let nested = try ReportJSONWriter().string(["k": [[Int]()], "l": [[1, 2]]])
        #expect(nested == "{\n  \"k\": [\n    []\n  ],\n  \"l\": [\n    [\n      1,\n      2\n    ]\n  ]\n}")
        // Placed at a depth: every line after the first indented for that level.
        let deep = try ReportJSONWriter().string(Inner(name: "x", count: 1), depth: 2)
        #expect(deep == "{\n      \"name\": \"x\",\n      \"count\": 1\n    }")
        #expect(try ReportJSONWriter().string([String]()) == "[]")
        #expect(try ReportJSONWriter().string(Optional<Int>.none) == "null")
    }

    @Test func prettyAndCompactOutputParseToTheSameValue() throws {
        let pretty = try ReportJSONWriter(style: .pretty).encode(Self.sample)
        let compact = try ReportJSONWriter(style: .compact).encode(Self.sample)
        let a = try JSONSerialization.jsonObject(with: Data(pretty)) as? NSDictionary
        let b = try JSONSerialization.jsonObject(with: Data(compact)) as? NSDictionary
        #expect(a != nil)
        #expect(a == b)
        #expect(!compact.contains(0x0A))
    }

    @Test func stringsAreEscapedAsJSONRequiresAndSafeForTerminals() throws {
        let text = "q\"b\\s/ n\n r\r t\t \u{0}\u{1F}\u{7F}\u{9B}\u{2028}\u{2029} é 😀"
        let encoded = try ReportJSONWriter(style: .compact).string([text])
        #expect(encoded == #"["q\"b\\s/ n\n r\r t\t \u0000\u001f\u007f\u009b\u2028\u2029 é 😀"]"#)
        let decoded = try JSONSerialization.jsonObject(with: Data(encoded.utf8)) as? [String]
        #expect(decoded == [text])
        #expect(ReportJSONWriter.quoted("a\u{8}\u{C}") == #""a\b\f""#)
    }

    /// The escaping of every string, done on UTF-8 bytes, equals the rule it states, written per
    /// Unicode scalar: every scalar of the Basic Multilingual Plane (but surrogates) and some beyond,
    /// alone and between ordinary text.
    @Test func escapingByBytesEqualsTheRulePerScalar() {
        func reference(_ text: String) -> String {
            var out = "\""
            for scalar in text.unicodeScalars {
                switch scalar.value {
                case 0x22: out += "\\\""
                case 0x5C: out += "\\\\"
                case 0x0A: out += "\\n"
                case 0x0D: out += "\\r"
                case 0x09: out += "\\t"
                case 0x08: out += "\\b"
                case 0x0C: out += "\\f"
                case 0x00..<0x20, 0x7F..<0xA0, 0x2028, 0x2029:
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                default: out.unicodeScalars.append(scalar)
                }
            }
            return out + "\""
        }
        var all = ""
        for value in UInt32(0)...0x10FFF where !(0xD800...0xDFFF).contains(value) {
            let scalar = Unicode.Scalar(value)!
            all.unicodeScalars.append(scalar)
            let alone = String(Character(scalar))
            if value < 0x3000 || value % 97 == 0 {
                #expect(ReportJSONWriter.quoted(alone) == reference(alone), "U+\(String(value, radix: 16))")
                let inText = "ab" + alone + "\u{C2}\u{E2}\u{80}" + alone + "cd"
                #expect(ReportJSONWriter.quoted(inText) == reference(inText), "U+\(String(value, radix: 16)) in text")
            }
        }
        #expect(ReportJSONWriter.quoted(all) == reference(all))
        #expect(ReportJSONWriter.quoted("") == "\"\"")
    }

    @Test func numbersAndNonFiniteValues() throws {
        #expect(try ReportJSONWriter(style: .compact).string([1.5, 2.0, -0.25]) == "[1.5,2,-0.25]")
        #expect(try ReportJSONWriter(style: .compact).string([Int64.min]) == "[-9223372036854775808]")
        #expect(throws: EncodingError.self) { try ReportJSONWriter().encode([Double.nan]) }
        #expect(throws: EncodingError.self) { try ReportJSONWriter().encode(["x": Double.infinity]) }
    }

    /// Hand-written conformances: nested containers, a second container request, super encoders.
    struct Custom: Encodable {
        enum Keys: String, CodingKey { case a, nested, list, more, `super` }
        enum NestedKeys: String, CodingKey { case x }

        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: Keys.self)
            try c.encode(1, forKey: .a)
            var nested = c.nestedContainer(keyedBy: NestedKeys.self, forKey: .nested)
            try nested.encode("y", forKey: .x)
            var list = c.nestedUnkeyedContainer(forKey: .list)
            try list.encode(true)
            try list.encodeNil()
            var inner = list.nestedContainer(keyedBy: NestedKeys.self)
            try inner.encodeIfPresent(Optional<String>.none, forKey: .x)
            // The same object, asked for again (as JSONEncoder allows).
            var again = encoder.container(keyedBy: Keys.self)
            try again.encode([1], forKey: .more)
            let sup = again.superEncoder()
            var single = sup.singleValueContainer()
            try single.encode("s")
        }
    }

    @Test func nestedContainersCloseInOrder() throws {
        let text = try ReportJSONWriter(style: .compact).string(Custom())
        #expect(text == #"{"a":1,"nested":{"x":"y"},"list":[true,null,{"x":null}],"more":[1],"super":"s"}"#)
        let pretty = try ReportJSONWriter().encode(Custom())
        #expect(try JSONSerialization.jsonObject(with: Data(pretty)) is NSDictionary)
    }

    /// A conformance that keeps a container and writes after its value was finished is an
    /// error, not broken output.
    final class Leaky: Encodable, @unchecked Sendable {
        enum Keys: String, CodingKey { case a }
        var kept: KeyedEncodingContainer<Keys>?

        func encode(to encoder: any Encoder) throws {
            kept = encoder.container(keyedBy: Keys.self)
        }
    }

    struct UsesLeaky: Encodable {
        let leaky: Leaky
        enum Keys: String, CodingKey { case first, second }

        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: Keys.self)
            try c.encode(leaky, forKey: .first)
            try leaky.kept?.encode(1, forKey: .a)
            try c.encode(2, forKey: .second)
        }
    }

    @Test func misuseIsAnError() throws {
        #expect(throws: EncodingError.self) { try ReportJSONWriter().encode(UsesLeaky(leaky: Leaky())) }
    }

    @Test func timestampsAreUTCWholeSeconds() throws {
        let date = Date(timeIntervalSince1970: 1_795_456_800.75)
        #expect(try ReportJSONWriter().string(date) == #""2026-11-23T18:00:00Z""#)
    }

    /// The documents of the library use the rule: every key present, `null` when absent.
    @Test func libraryDocumentsWriteEveryKey() throws {
        let finding = Finding.error("x", "y")
        #expect(try ReportJSONWriter(style: .compact).string(finding)
            == #"{"code":"x","severity":"error","message":"y","location":null,"line":null,"column":null,"fix":null}"#)
        let headers = CDNHeaders(httpStatus: 404, httpVersion: "2")
        let text = try ReportJSONWriter(style: .compact).string(headers)
        #expect(text.hasPrefix(#"{"httpStatus":404,"httpVersion":"2","failureReason":null,"#))
        #expect(text.hasSuffix(#""cacheControl":null,"maxAge":null}"#))
    }

    /// Lint findings carry the line and column of what they point at as fields.
    @Test func lintFindingsCarryLineAndColumn() throws {
        let syntax = AASALinter.lint(Array("{\"applinks\":\n  {,}}".utf8))
        #expect(syntax.first?.code == "invalid-json")
        #expect(syntax.first?.line == 2)
        #expect(syntax.first?.column == 4)
        let pointer = AASALinter.lint(Array("{\"applinks\": {\"apps\": [\"x\"],\n \"details\": []}}".utf8))
        let apps = try #require(pointer.first { $0.code == "apps-not-empty" })
        #expect(apps.location == "/applinks/apps")
        #expect(apps.line == 1)
        #expect(apps.column == 23)
        let whole = try #require(AASALinter.lint(Array(repeating: 0x20, count: 200) + Array("{}".utf8), options: LintOptions(maxSize: 100)).first)
        #expect(whole.code == "too-large")
        #expect(whole.line == nil && whole.column == nil)
    }
}
