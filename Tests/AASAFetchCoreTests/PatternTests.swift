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

    /// States × text length is bounded too: a pattern within the state budget against a long
    /// text stops after ``CompiledPattern/maxSteps`` and does not match. Regression: one
    /// `match --cases` line (four such patterns, a URL of 448,576 bytes) ran for more than ten
    /// minutes, and every later line waited.
    @Test func workPastTheStepBudgetDoesNotMatch() throws {
        let pattern = CompiledPattern("/" + String(repeating: "*a", count: 4_000) + "*", role: .path)
        #expect(!pattern.isTooComplex)
        // The text would match (it ends as the pattern may): refused for the work it takes.
        let text = "/" + String(repeating: "a", count: 64 * 1024)
        let (matched, steps) = pattern.matchCost(text)
        #expect(!matched)
        #expect(steps > CompiledPattern.maxSteps && steps < CompiledPattern.maxSteps + 4 * 8_002 + 64, "steps \(steps)")
        // Still linear below the budget: a shorter text is answered in full.
        #expect(pattern.matches("/" + String(repeating: "a", count: 4_000)))
    }

    /// The budget is the URL's, shared by every pattern of the file: six patterns that each fit
    /// alone stop once together they spent it, and the explanation says the later ones ran out of
    /// work. (A budget per pattern let a line of sixty such patterns run for minutes.)
    @Test func theStepBudgetIsTheURLs() throws {
        let one = #"{"/":"/\#(String(repeating: "*a", count: 400))*b"}"#
        let json = MatcherFixture.components("[" + [String](repeating: one, count: 6).joined(separator: ",") + "]")
        let text = "/" + String(repeating: "a", count: 16 * 1024)
        let alone = CompiledPattern("/" + String(repeating: "*a", count: 400) + "*b", role: .path).matchCost(text)
        #expect(alone.steps < CompiledPattern.maxSteps && alone.steps * 6 > CompiledPattern.maxSteps, "\(alone.steps)")
        let explanation = URLMatcher(entitlementDomains: ["applinks:example.com"], files: ["example.com": try MatcherFixture.compiled(json)])
            .explain(url: "https://example.com" + text, appID: MatcherFixture.app)
        #expect(explanation.decision == .noMatch)
        let failures = explanation.nearest?.failures ?? []
        #expect(failures.contains { $0.tooComplex }, "\(failures.map(\.summary))")
        #expect(explanation.reason.contains("steps against this text") || failures.contains { $0.summary.contains("steps against this text") })
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

    /// The state count the budget uses is the one the automaton builds (shared trie prefixes
    /// included), so the limit refuses exactly what would be too large.
    @Test func stateCountsAreTheBuiltOnes() throws {
        let variables = ["v": (0..<300).map { "7-value-\($0)-*" }, "w": ["a", "ab", "abc?"]]
        for source in ["/a*b", "/$(v)/x*y", "/?*$(w)$(w)*z", "*$(region)_$(lang)?", "/$(digit)*$(v)"] {
            let pattern = CompiledPattern(source, role: .path, variables: variables)
            guard case .automaton(let automaton) = pattern.engine else {
                Issue.record("\(source) has no automaton")
                continue
            }
            #expect(CompiledPattern.automatonStates(source, role: .path, variables: variables) == automaton.stateCount, "\(source)")
        }
    }

    /// A pattern over the state budget is never matched and says so; a file's patterns share a
    /// budget. A 16 KB file (a variable of 2,000 values referenced 1,000 times) took 1.2 GB and
    /// 29 s before; it is refused at once.
    @Test func patternsOverTheStateBudgetAreRefused() throws {
        let values = (0..<2000).map { String(format: "%03x", $0) }
        let source = "/" + String(repeating: "$(a)", count: 1000)
        let started = ContinuousClock.now
        let pattern = CompiledPattern(source, role: .path, variables: ["a": values])
        #expect(pattern.isTooComplex && !pattern.matches("/abc"))
        #expect(ContinuousClock.now - started < .seconds(20))
        #expect(!CompiledPattern("/$(a)*$(a)", role: .path, variables: ["a": values]).isTooComplex)
        // A file: each pattern fits alone, together they pass the file's budget.
        let component = #"{"/":"/*$(a)*$(a)*$(a)*$(a)*"}"#
        let json = #"{"applinks":{"substitutionVariables":{"a":["#
            + values.map { "\"\($0)\"" }.joined(separator: ",")
            + #"]},"details":[{"appIDs":["ABCDE12345.com.example.app"],"components":["#
            + Array(repeating: component, count: 40).joined(separator: ",") + "]}]}}"
        let document = try AASADecoder.decodeDocument(Array(json.utf8))
        let compiled = CompiledAssociation(document: document)
        guard case .components(let components, _) = compiled.details[0].body else { return }
        let refused = components.filter { $0.path?.isTooComplex == true }.count
        #expect(refused > 0 && refused < 40, "\(refused)")
        #expect(components[0].path?.isTooComplex == false)
        let lint = AASALinter.lint(Array(json.utf8))
        #expect(lint.filter { $0.code == "pattern-too-complex" }.count == 1, "\(lint.map(\.code))")
        let explained = compiled.explain(url: "https://example.com/zzz", appID: "ABCDE12345.com.example.app")
        #expect(explained.decision == .noMatch)
    }

}

/// Wraps a row so that Swift Testing names each argument.
struct PatternRow: CustomTestStringConvertible, Sendable {
    let row: PatternTests.Row
    var testDescription: String { "\(row.pattern) ~ \(row.text)" }
}
