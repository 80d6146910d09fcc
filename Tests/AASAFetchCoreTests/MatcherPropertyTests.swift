import AASAFetchCore
import Foundation
import Testing

/// Seeded random property tests, bounded so they run in well under a second.
struct MatcherPropertyTests {
    static let literalAlphabet: [Character] = Array("abAB/-_.%0129éЖ中")
    static let textAlphabet: [Character] = Array("abAB/-_.%0129éЖ中")
    static let patternAlphabet: [Character] = Array("abAB/-_.01*?*?")

    @Test(arguments: [UInt64(1), 2, 3])
    func literalMatchesOnlyItself(seed: UInt64) {
        var random = SeededGenerator(seed: seed)
        for _ in 0..<500 {
            let literal = random.string(from: Self.literalAlphabet, maxLength: 8)
            let pattern = CompiledPattern(literal, role: .plain)
            #expect(pattern.matches(literal))
            let other: String
            if Bool.random(using: &random) {
                var characters = Array(literal)
                if !characters.isEmpty {
                    characters[Int.random(in: 0..<characters.count, using: &random)] = Self.textAlphabet.randomElement(using: &random) ?? "x"
                }
                other = String(characters)
            } else {
                other = random.string(from: Self.textAlphabet, maxLength: 8)
            }
            #expect(pattern.matches(other) == (other == literal), "\(literal) vs \(other)")
        }
    }

    @Test(arguments: [UInt64(4), 5])
    func starMatchesEveryPath(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        let compiled = try MatcherFixture.compiled(MatcherFixture.components(##"[{"/":"*"}]"##))
        let star = CompiledPattern("*", role: .path)
        for _ in 0..<500 {
            let path = random.string(from: Self.textAlphabet + ["?", "#", "&", "=", " "], maxLength: 20)
            #expect(star.matches(path))
            #expect(compiled.decide(url: "https://example.com/" + path, appID: MatcherFixture.app).decision == .match, "\(path)")
        }
    }

    @Test(arguments: [UInt64(6), 7, 8])
    func earlierExcludeNeverTurnsNoMatchIntoMatch(seed: UInt64) {
        var random = SeededGenerator(seed: seed)
        let paths = ["/a/*", "/a/?", "/b", "*", "/?*", "/a/b/*", "/$(digit)/*", "/A/*"]
        let fragments = [nil, "*", "x", "?*"]
        func randomRule(exclude: Bool) -> ComponentRule {
            ComponentRule(
                path: Bool.random(using: &random) ? paths.randomElement(using: &random) : nil,
                query: Bool.random(using: &random) ? .items([QueryItemPattern(name: "q", pattern: ["1", "*", "?*"].randomElement(using: &random) ?? "*")]) : nil,
                fragment: fragments.randomElement(using: &random) ?? nil,
                exclude: exclude,
                options: ComponentDefaults(caseSensitive: Bool.random(using: &random) ? false : nil)
            )
        }
        let urls = ["https://example.com/a/1", "https://example.com/a/b/c?q=1", "https://example.com/b#x", "https://example.com/",
                    "https://example.com/7/x?q=", "https://example.com/A/b#y", "https://example.com/c?q=2"]
        for _ in 0..<300 {
            let rules = (0..<Int.random(in: 0...4, using: &random)).map { _ in randomRule(exclude: Bool.random(using: &random)) }
            let detail = AppLinksDetail(appIDs: [MatcherFixture.app], components: rules)
            let before = CompiledAssociation(document: AASADocument(applinks: AppLinks(details: [detail])))
            var withExclude = detail
            withExclude.components?.insert(randomRule(exclude: true), at: 0)
            let after = CompiledAssociation(document: AASADocument(applinks: AppLinks(details: [withExclude])))
            for url in urls {
                let old = before.decide(url: url, appID: MatcherFixture.app).decision
                let new = after.decide(url: url, appID: MatcherFixture.app).decision
                #expect(new == old || new == .exclude, "\(rules) \(url)")
            }
        }
    }

    @Test(arguments: [UInt64(9), 10, 11])
    func caseInsensitiveEqualsLowercasedASCII(seed: UInt64) {
        var random = SeededGenerator(seed: seed)
        for _ in 0..<800 {
            let pattern = random.string(from: Self.patternAlphabet, maxLength: 7)
            let text = random.string(from: Array("abAB/-_.01"), maxLength: 7)
            for role in [PatternRole.plain, .path] {
                let insensitive = CompiledPattern(pattern, role: role, caseSensitive: false).matches(text)
                let lowered = CompiledPattern(pattern.lowercased(), role: role, caseSensitive: true).matches(text.lowercased())
                #expect(insensitive == lowered, "\(pattern) vs \(text)")
            }
        }
    }

    /// Cross-check the automaton against a naive (exponential, fine for short inputs) matcher.
    @Test(arguments: [UInt64(12), 13])
    func automatonAgreesWithNaiveGlob(seed: UInt64) {
        var random = SeededGenerator(seed: seed)
        func naive(_ pattern: [Character], _ text: [Character]) -> Bool {
            guard let first = pattern.first else { return text.isEmpty }
            let rest = Array(pattern.dropFirst())
            switch first {
            case "*": return (0...text.count).contains { naive(rest, Array(text.dropFirst($0))) }
            case "?": return !text.isEmpty && naive(rest, Array(text.dropFirst()))
            default: return text.first == first && naive(rest, Array(text.dropFirst()))
            }
        }
        for _ in 0..<1500 {
            let pattern = random.string(from: Array("ab*?é"), maxLength: 7)
            let text = random.string(from: Array("abé"), maxLength: 8)
            #expect(CompiledPattern(pattern, role: .plain).matches(text) == naive(Array(pattern), Array(text)), "\(pattern) vs \(text)")
        }
    }
}
