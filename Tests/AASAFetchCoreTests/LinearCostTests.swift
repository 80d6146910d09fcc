@testable import AASAFetchCore
import Testing

/// Parsing, decoding, linting and diffing cost work proportional to the file: ten times the keys
/// cost at most about ten times the key comparisons and lookups (counted by `CostProbe`, never
/// timed). With a linear scan per key lookup, findings located by JSON pointer made the work grow
/// with the square of the keys (40,000 keys cost `lint` 50 times what 4,000 did).
struct LinearCostTests {
    static let app = "ABCDE12345.com.example.app"
    static let detail = #"{"appIDs":["\#(app)"],"components":[{"/":"/a"}]}"#

    /// Documents with `n` distinct keys in one object, at every place a file can hold many.
    static let shapes: [(name: String, make: @Sendable (Int) -> String)] = [
        ("unknown services", { n in "{\"applinks\":{\"details\":[\(detail)]}," + keys(n, "k", "1") + "}" }),
        ("unknown applinks keys", { n in "{\"applinks\":{\"details\":[\(detail)]," + keys(n, "k", "1") + "}}" }),
        ("unknown detail keys", { n in "{\"applinks\":{\"details\":[{\"appIDs\":[\"\(app)\"],\"paths\":[\"/a\"]," + keys(n, "k", "1") + "}]}}" }),
        ("legacy details dictionary", { n in "{\"applinks\":{\"details\":{" + keys(n, "ABCDE12345.com.app", "{\"paths\":[\"/a\"]}") + "}}}" }),
        ("substitution variables", { n in "{\"applinks\":{\"substitutionVariables\":{" + keys(n, "v", "[\"a\"]") + "},\"details\":[\(detail)]}}" }),
        ("query keys", { n in "{\"applinks\":{\"details\":[{\"appIDs\":[\"\(app)\"],\"components\":[{\"/\":\"/a\",\"?\":{" + keys(n, "q", "\"x\"") + "}}]}]}}" }),
        ("duplicate keys", { n in "{\"applinks\":{\"details\":[\(detail)]},\"x\":{" + keys(n / 2, "d", "1") + "," + keys(n / 2, "d", "2") + "}}" }),
        ("webcredentials apps", { n in "{\"webcredentials\":{\"apps\":[" + (0..<n).map { "\"ABCDE12345.com.a\($0)\"" }.joined(separator: ",") + "]}," + keys(n, "k", "1") + "}" }),
    ]

    static func keys(_ n: Int, _ prefix: String, _ value: String) -> String {
        (0..<n).map { "\"\(prefix)\($0)\":\(value)" }.joined(separator: ",")
    }

    /// Key comparisons and lookups made by everything that reads a file: parser, decoder, linter.
    static func cost(_ text: String) -> Int {
        CostProbe.measure {
            let bytes = Array(text.utf8)
            _ = AASALinter.lint(bytes, options: LintOptions(maxSize: 1 << 30))
            _ = AASADecoder.decode(bytes)
        }
    }

    @Test(arguments: 0..<shapes.count)
    func keyLookupsGrowLinearly(shape: Int) throws {
        let (name, make) = Self.shapes[shape]
        let small = Self.cost(make(1000))
        let large = Self.cost(make(10_000))
        #expect(small > 0, "\(name): nothing counted")
        #expect(large <= small * 12, "\(name): 10 times the keys cost \(Double(large) / Double(max(small, 1))) times the comparisons")
    }

    /// Large objects carry a hash index: the duplicate-key check and key lookups use it.
    @Test func largeObjectsAreIndexed() throws {
        let text = "{" + Self.keys(100, "k", "1") + ",\"k7\":2}"
        let root = try JSONParser.parse(Array(text.utf8)).root
        #expect(root.hasDuplicateKeys)
        #expect(root.uniqueMembers.count == 100)
        #expect(root.member("k7")?.value.position.column == text.count - 1)
        #expect(root.member("k99") != nil && root.member("k100") == nil)
        let lookups = CostProbe.measure {
            for index in 0..<100 { _ = root.member("k\(index)") }
        }
        #expect(lookups == 100)
        // Small objects are scanned, with the same answers.
        let small = try JSONParser.parse(Array(#"{"a":1,"b":2,"a":3}"#.utf8)).root
        #expect(small.hasDuplicateKeys && small.uniqueMembers.map(\.key) == ["a", "b"])
        #expect(small.member("a")?.value.kind == .number(JSONNumber(text: "3", value: 3)))
        // A value whose kind is replaced gets a fresh index.
        var changed = root
        changed.kind = .object([])
        #expect(changed.member("k7") == nil && !changed.hasDuplicateKeys)
    }

    /// Diffing visits each detail a constant number of times however many apps there are, and a
    /// change shared by many apps lists its rules once: the output grows with the files, not with
    /// apps × rules.
    @Test func diffGrowsWithTheFiles() throws {
        func documents(apps: Int, rules: Int, sharedDetail: Bool) throws -> (AASADocument, AASADocument) {
            func text(_ prefix: String) -> String {
                let components = (0..<rules).map { "{\"/\":\"/\(prefix)\($0)\"}" }.joined(separator: ",")
                let ids = (0..<apps).map { "\"ABCDE12345.com.a\($0)\"" }
                let details = sharedDetail
                    ? "{\"appIDs\":[\(ids.joined(separator: ","))],\"components\":[\(components)]}"
                    : ids.map { "{\"appIDs\":[\($0)],\"components\":[\(components)]}" }.joined(separator: ",")
                return "{\"applinks\":{\"details\":[\(details)]}}"
            }
            return (try AASADecoder.decodeDocument(Array(text("a").utf8)), try AASADecoder.decodeDocument(Array(text("b").utf8)))
        }
        // Many details, one app each.
        let (old1, new1) = try documents(apps: 200, rules: 1, sharedDetail: false)
        let (old2, new2) = try documents(apps: 2000, rules: 1, sharedDetail: false)
        var changes1: [AASAChange] = []
        var changes2: [AASAChange] = []
        let small = CostProbe.measure { changes1 = AASADiff.changes(from: old1, to: new1) }
        let large = CostProbe.measure { changes2 = AASADiff.changes(from: old2, to: new2) }
        #expect(changes1.count == 200 && changes2.count == 2000)
        #expect(large <= small * 12, "10 times the details cost \(Double(large) / Double(small)) times the work")

        // One detail listing every app, with many rules that all change.
        let (old3, new3) = try documents(apps: 300, rules: 300, sharedDetail: true)
        let shared = AASADiff.changes(from: old3, to: new3)
        #expect(shared.count == 300)
        let text = shared.map { ($0.beforeText ?? "") + ($0.afterText ?? "") + $0.description }.joined()
        #expect(text.count < 100_000, "\(text.count) characters of changes for a 20 KB file")
        let first = try #require(shared.first)
        #expect(first.appID == "ABCDE12345.com.a0" && first.beforeText?.split(separator: "\n").count == 300)
        #expect(shared.dropFirst().allSatisfy { $0.before == nil && $0.after == nil && $0.description.hasSuffix("the same change as for ABCDE12345.com.a0, where the rules are listed") })
        // Small shared changes are still listed for every app.
        let (old4, new4) = try documents(apps: 3, rules: 2, sharedDetail: true)
        #expect(AASADiff.changes(from: old4, to: new4).allSatisfy { $0.beforeText?.split(separator: "\n").count == 2 })
    }
}
