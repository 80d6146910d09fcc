@testable import AASAFetchCore
import Testing

/// The byte-level scans of entry parsing and prioritizing answer what the character-level code they
/// replaced answered, on generated text that mixes ASCII with combining marks, non-ASCII letters
/// and the Kelvin sign (which lower-cases to an ASCII `k`).
struct ByteScanTests {
    static let alphabet: [Character] = [
        "a", "b", "k", "z", "A", "K", "Z", "0", "1", "2", "5", "9", "-", ".", ".", ":", ":", "?", "/", "[", "]", "#", " ",
        "é", "\u{212A}", ".\u{301}", ":\u{301}", "-\u{301}", "ü", "\u{0301}", "\r\n",
    ]
    static let asciiAlphabet: [Character] = ["a", "c", "m", "o", "0", "1", "2", "5", "9", "-", ".", ".", "."]

    static func samples(count: Int, seed: UInt64) -> [String] {
        var random = SeededGenerator(seed: seed)
        var texts = ["", ".", "..", "a", "-", "a-", "-a", "a..b", "a.b.", "com", "EXAMPLE.COM", "x.\u{212A}R", "1.2.3.4",
                     "255.255.255.255", "256.1.1.1", "1.2.3", "01.2.3.4", "1.2.3.4:443", "::1", "[::1]:443", "[::1",
                     String(repeating: "a", count: 63), String(repeating: "a", count: 64), String(repeating: "a.", count: 126) + "a",
                     String(repeating: "a.", count: 127)]
        for _ in 0..<count {
            texts.append(random.string(from: alphabet, maxLength: 12))
            texts.append(random.string(from: asciiAlphabet, maxLength: 16))
        }
        return texts
    }

    @Test func indexSearchesMatchCharacterSearches() {
        for text in Self.samples(count: 3000, seed: 0xB17E) {
            for scalar: Unicode.Scalar in [":", "?", "/", "."] {
                let character = Character(scalar)
                #expect(EntryText.firstIndex(of: scalar, in: text) == text.firstIndex(of: character), "\(text.debugDescription) \(scalar)")
                #expect(EntryText.lastIndex(of: scalar, in: text) == text.lastIndex(of: character), "\(text.debugDescription) \(scalar)")
            }
        }
    }

    @Test func ldhCheckAgreesWithTheLabelByLabelCheck() {
        var valid = 0
        for host in Self.samples(count: 3000, seed: 0x1D4) {
            let byLabels = EntryParser.hostSyntaxProblemByLabels(host)
            #expect(EntryParser.isValidLDHName(host) == (byLabels == nil), "\(host.debugDescription): \(byLabels ?? "valid")")
            #expect(EntryParser.hostSyntaxProblem(host) == byLabels)
            if byLabels == nil { valid += 1 }
        }
        #expect(valid > 500, "the samples hold valid names too")
    }

    /// The IP address test by characters: a bracketed or bare IPv6 literal, or a name whose last
    /// label (a trailing dot aside) is a decimal or `0x` hexadecimal number, as resolvers and the
    /// WHATWG URL parser read it.
    static func ipAddressByCharacters(in rest: String) -> String? {
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { return rest }
            return String(rest[...close])
        }
        if rest.filter({ $0 == ":" }).count >= 2 { return rest }
        let host = rest.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        var parts = host.split(separator: ".", omittingEmptySubsequences: false)
        if parts.count > 1, parts.last?.isEmpty == true { parts.removeLast() }
        guard let last = parts.last, !last.isEmpty else { return nil }
        // By scalars: a Character range holds "1\u{301}" too.
        let decimal = last.unicodeScalars.allSatisfy { ("0"..."9").contains($0) }
        let lower = last.lowercased()
        let hex = lower.hasPrefix("0x") && lower.unicodeScalars.dropFirst(2).allSatisfy { ("0"..."9").contains($0) || ("a"..."f").contains($0) }
        return decimal || hex ? String(host) : nil
    }

    @Test func ipAddressTestAgreesWithTheCharacterLevelOne() {
        var found = 0
        for text in Self.samples(count: 3000, seed: 0x1F4) {
            let expected = Self.ipAddressByCharacters(in: text)
            #expect(EntryParser.ipAddress(in: text) == expected, "\(text.debugDescription)")
            if expected != nil { found += 1 }
        }
        #expect(found > 20, "the samples hold addresses too")
        #expect(EntryParser.ipAddress(in: "10.0.0.1") == "10.0.0.1")
        #expect(EntryParser.ipAddress(in: "10.0.0.256") == "10.0.0.256", "ends in a number: no name, though no valid address")
        #expect(EntryParser.ipAddress(in: "10.0.0.example") == nil)
        #expect(EntryParser.ipAddress(in: "1:\u{301}2:3") == nil, "a colon with a combining mark is another character")
    }

    @Test func topLevelLabelAgreesWithSplitting() {
        for host in Self.samples(count: 3000, seed: 0x7D) {
            let expected = host.split(separator: ".").last.map { String($0).lowercased() } ?? ""
            #expect(DomainPrioritizer.topLevelLabel(of: host) == expected, "\(host.debugDescription)")
        }
        #expect(DomainPrioritizer.topLevelLabel(of: "Example.COM.") == "com")
        #expect(DomainPrioritizer(region: "KR").tier(of: "x.\u{212A}R") == 1, "the Kelvin sign lower-cases to k, as before")
    }
}
