import AASAFetchCore
import Foundation
import Testing

/// ``EntryText`` answers exactly what the Foundation calls it replaces answer.
struct EntryTextTests {
    /// Every scalar of the Basic Multilingual Plane (and a few beyond), alone and around a name,
    /// trims as `trimmingCharacters(in:)` trims it, with and without newlines.
    @Test func trimmingMatchesFoundationForEveryScalar() {
        var scalars = (0..<0xD800).compactMap(Unicode.Scalar.init) + (0xE000..<0x10000).compactMap(Unicode.Scalar.init)
        scalars += [0x1F600, 0xE0020, 0x10FFFD].compactMap(Unicode.Scalar.init)
        var mismatches: [String] = []
        for scalar in scalars {
            let s = String(scalar)
            for text in [s, "\(s)a.example", "a.example\(s)", "\(s)\(s) x \(s)", "a\(s)b", "\(s)\u{301}a", " \(s)"] {
                for newlines in [false, true] {
                    let expected = text.trimmingCharacters(in: newlines ? .whitespacesAndNewlines : .whitespaces)
                    if EntryText.trimmed(text, newlines: newlines) != expected {
                        mismatches.append("U+\(String(scalar.value, radix: 16)) in \(text.debugDescription), newlines \(newlines)")
                    }
                }
            }
        }
        #expect(mismatches.isEmpty, "\(mismatches.prefix(10))")
        #expect(EntryText.trimmed("\t applinks:example.com \u{3000}") == "applinks:example.com")
        #expect(EntryText.trimmed("example.com\r\n", newlines: true) == "example.com")
        #expect(EntryText.trimmed("example.com\r\n") == "example.com\r\n", "CR and LF are not white space without newlines")
        #expect(EntryText.trimmed(Substring("  ")) == "")
    }

    @Test func searchingAndPrefixesAreByteExact() {
        #expect(EntryText.contains("https://example.com", ascii: "://"))
        #expect(!EntryText.contains("example.com:/", ascii: "://"))
        #expect(EntryText.contains("a:/:://", ascii: "://"))
        #expect(!EntryText.contains(":/", ascii: "://"))
        #expect(EntryText.contains("x", ascii: ""))
        for text in ["HTTP://x", "Https:x", "http:", "htt", "xhttp:", "ＨTTP:", "hTtPs:", "", "h"] {
            #expect(EntryText.hasPrefix(text, asciiIgnoringCase: "http:") == text.lowercased().hasPrefix("http:"), "\(text)")
            #expect(EntryText.hasPrefix(text, asciiIgnoringCase: "https:") == text.lowercased().hasPrefix("https:"), "\(text)")
        }
    }
}
