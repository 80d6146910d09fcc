@testable import AASAFetchCore
import Foundation
import Testing

struct PatternTests {
    typealias Row = (pattern: String, role: PatternRole, caseSensitive: Bool, text: String, expected: Bool)

    static let rows: [Row] = [
        ("*", .plain, true, "", true),
        ("?", .plain, true, "", false),
        ("?", .plain, true, "é", true),  // one scalar, two UTF-8 bytes
        ("?", .plain, true, "éé", false),
        ("??", .plain, true, "中國", true),
        ("?", .plain, true, "😀", true),
        ("?*", .plain, true, "", false),
        ("?*", .plain, true, "x", true),
        ("a*b", .plain, true, "a/x/b", true),
        ("a?c", .plain, true, "a/c", true),
        ("abc", .plain, true, "abcd", false),
        ("ABC", .plain, false, "abc", true),
        ("Straße", .plain, false, "STRASSE", false),  // simple folding only
        ("É", .plain, false, "é", true),
        ("$(digit)$(digit)", .plain, true, "42", true),
        ("$(upper)", .plain, false, "q", true),  // classes fold too
        ("$(xdigit)", .plain, true, "F", true),
        ("$(region)", .plain, true, "GB", true),
        ("$(region)", .plain, true, "UK", false),
        ("$(region)", .plain, false, "gb", true),
        ("$(lang)", .plain, true, "zh", true),
        ("$(lang)", .plain, true, "EN", false),
        ("$(nope)", .plain, true, "", false),  // undefined variables never match
        ("$(nope", .plain, true, "$(nope", true),  // unterminated: literal
        ("/buy/*", .path, true, "/buy", true),
        ("/buy/*", .path, true, "/buyer", false),
        ("/buy/", .path, true, "/buy//", true),
        ("//abc", .path, true, "/abc", true),
        ("", .path, true, "", true),
        ("/", .path, true, "", true),
        ("/id/????", .path, true, "/id/481", false),
        ("/a/*/c", .path, true, "/a/c", false),
        ("/a/**", .path, true, "/a", true),
    ]

    @Test(arguments: rows.map { PatternRow(row: $0) })
    func pattern(_ wrapped: PatternRow) {
        let row = wrapped.row
        let pattern = CompiledPattern(row.pattern, role: row.role, caseSensitive: row.caseSensitive)
        #expect(pattern.matches(row.text) == row.expected)
    }

    @Test func customVariablesMayHoldWildcardsAndWinOverPredefined() {
        let variables = ["id": ["a?c", "x*"], "digit": ["seven"]]
        #expect(CompiledPattern("/$(id)", role: .path, variables: variables).matches("/abc"))
        #expect(CompiledPattern("/$(id)", role: .path, variables: variables).matches("/x/y/z"))
        #expect(!CompiledPattern("/$(id)", role: .path, variables: variables).matches("/ab"))
        #expect(CompiledPattern("$(digit)", role: .plain, variables: variables).matches("seven"))
        #expect(!CompiledPattern("$(digit)", role: .plain, variables: variables).matches("7"))
        #expect(!CompiledPattern("$(empty)", role: .plain, variables: ["empty": []]).matches(""))
        #expect(CompiledPattern("a$(e)b", role: .plain, variables: ["e": [""]]).matches("ab"))
    }

    @Test func undefinedVariablesAreReported() {
        let pattern = CompiledPattern("/$(a)/$(lang)/$(b)", role: .path, variables: ["a": ["x"]])
        #expect(pattern.undefinedVariables == ["b"])
        #expect(pattern.referencedVariables == ["a", "lang", "b"])
    }

    /// The classic exponential-backtracking trap: the automaton's work stays linear.
    @Test func pathologicalStarsAreLinear() {
        let text = String(repeating: "a", count: 10 * 1024)
        let pattern = CompiledPattern("*a*a*a*a*a*b", role: .plain)
        let (matched, steps) = pattern.matchCost(text)
        #expect(!matched)
        // 6 stars and 6 literals: at most ~13 states with ≤ 2 edges each per byte.
        #expect(steps <= 40 * text.utf8.count, "steps \(steps)")
        let (matchedToo, stepsToo) = pattern.matchCost(text + "b")
        #expect(matchedToo)
        #expect(stepsToo <= 40 * (text.utf8.count + 1))
    }

    @Test func pathologicalQuestionStarsAreLinear() {
        let text = String(repeating: "ab", count: 5 * 1024)
        let pattern = CompiledPattern(String(repeating: "?*a", count: 20) + "c", role: .path)
        let (matched, steps) = pattern.matchCost(text)
        #expect(!matched)
        // Each `?` adds 4 states; bounded by states × edges per byte.
        #expect(steps <= 400 * text.utf8.count, "steps \(steps)")
    }

    /// Many variables with many values compile to tries, not a product of expansions.
    @Test func manyVariablesWithManyValuesStayLinear() {
        var variables: [String: [String]] = [:]
        var pattern = ""
        for index in 0..<20 {
            variables["v\(index)"] = (0..<300).map { "\(index)-value-\($0)-*" }
            pattern += "/$(v\(index))"
        }
        pattern += "/$(lang)_$(region)"
        let compiled = CompiledPattern(pattern, role: .path, variables: variables)
        let text = (0..<20).map { "/\($0)-value-\($0 * 7)-tail" }.joined() + "/en_US"
        let (matched, steps) = compiled.matchCost(text)
        #expect(matched)
        let (missed, missSteps) = compiled.matchCost(text + "x")
        #expect(!missed)
        let bytes = text.utf8.count + 1
        // The bound is linear in the text; a product of expansions (300^20) could not fit it.
        #expect(steps <= 20_000 * bytes && missSteps <= 20_000 * bytes, "steps \(steps) \(missSteps)")
    }
}

/// Wraps a row so that Swift Testing names each argument.
struct PatternRow: CustomTestStringConvertible, Sendable {
    let row: PatternTests.Row
    var testDescription: String { "\(row.pattern) ~ \(row.text)" }
}
