import AASAFetchCore
import AASAFetchTestSupport
import Foundation
import Testing

/// The real-world corpus in `testdata/corpus` (read at run time, never modified).
struct CorpusTests {
    struct Entry: Sendable {
        var name: String
        var bytes: [UInt8]
        var notes: String
    }

    static func load() throws -> [Entry] {
        let folder = TestPaths.corpus.appendingPathComponent("aasa")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".json") }.sorted()
        let tsv = try String(contentsOf: TestPaths.corpus.appendingPathComponent("sources.tsv"), encoding: .utf8)
        var notes: [String: String] = [:]
        for line in tsv.split(whereSeparator: \.isNewline) {
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
            if fields.count >= 5, fields[0].hasPrefix("aasa/") {
                notes[String(fields[0].dropFirst(5))] = String(fields[4])
            }
        }
        return try names.map { name in
            Entry(name: name, bytes: Array(try Data(contentsOf: folder.appendingPathComponent(name))), notes: notes[name] ?? "")
        }
    }

    @Test func everyFileDecodesAndLintsWithKnownCodes() throws {
        let entries = try Self.load()
        #expect(entries.count >= 60)
        let catalog = Dictionary(uniqueKeysWithValues: AASALinter.catalog.map { ($0.code, $0.severity) })
        for entry in entries {
            let result = AASADecoder.decode(entry.bytes)
            let findings = AASALinter.lint(entry.bytes)
            for finding in findings {
                #expect(catalog[finding.code] == finding.severity, "\(entry.name): \(finding.code)")
            }
            let broken = entry.notes.contains("INVALID JSON") || entry.notes.contains("NOT JSON")
            if broken {
                #expect(result.document == nil, "\(entry.name)")
                #expect(findings.contains { $0.code == "invalid-json" }, "\(entry.name)")
            } else {
                #expect(result.document != nil, "\(entry.name) should decode: \(result.findings.map(\.message))")
            }
        }
    }

    /// Invalid files: exact positions (checked by hand against the files).
    @Test(arguments: [
        ("037.json", 5, 5, JSONSyntaxError.Kind.trailingComma),
        ("092.json", 18, 1, .trailingComma),
        ("097.json", 16, 9, .trailingComma),
        ("068.json", 1, 1, .unexpectedCharacter),
    ])
    func invalidJSONPositions(name: String, line: Int, column: Int, kind: JSONSyntaxError.Kind) throws {
        let entry = try #require(try Self.load().first { $0.name == name })
        guard case .invalidJSON(let error, let findings) = AASADecoder.decode(entry.bytes) else {
            Issue.record("\(name) should be invalid JSON")
            return
        }
        #expect(error.line == line)
        #expect(error.column == column)
        #expect(error.kind == kind)
        #expect(findings.first?.location == "\(line):\(column)")
    }

    @Test func dictionaryFormFilesDecodeWithWarning() throws {
        let entries = try Self.load().filter { $0.notes.contains("DICTIONARY-FORM") }
        #expect(entries.map(\.name) == ["061.json", "091.json"])
        for entry in entries {
            let result = AASADecoder.decode(entry.bytes)
            let document = try #require(result.document, "\(entry.name)")
            #expect(document.applinks?.detailsIsDictionary == true)
            #expect(result.findings.contains { $0.code == "legacy-details-dictionary" && $0.severity == .warning })
        }
        let first = try #require(entries.first)
        let handoff = try #require(AASADecoder.decode(first.bytes).document)
        #expect(handoff.appIDs(for: .applinks) == ["QA8AV789YN.jp.hajimenakamura.blog.handoff"])
        #expect(handoff.applinks?.details.first?.paths == ["/wwdc/news/", "/videos/wwdc/2015/*"])
    }

    @Test func placeholderAppIDs() throws {
        let entries = try Self.load().filter { $0.notes.contains("PLACEHOLDER") }
        #expect(entries.count >= 7)
        for entry in entries {
            #expect(AASALinter.lint(entry.bytes).contains { $0.code == "app-id-placeholder" }, "\(entry.name)")
        }
    }

    @Test(arguments: [
        ("065.json", "unknown-key", "/applinks/Details"),
        ("065.json", "missing-details", "/applinks"),
        ("040.json", "app-id-missing-prefix", "/applinks/details/0/appID"),
        ("055.json", "app-id-missing-prefix", "/applinks/details/0/appID"),
        ("088.json", "app-id-missing-prefix", "/appclips/apps/0"),
        ("031.json", "app-id-numeric-prefix", "/applinks/details/0/appIDs/0"),
        ("062.json", "apps-not-empty", "/applinks/apps"),
        ("062.json", "empty-details", "/applinks/details"),
        ("064.json", "duplicate-app-id", "/applinks/details/1/appID"),
        ("074.json", "empty-app-ids", "/applinks/details/0/appIDs"),
        ("080.json", "unreachable-rule", "/applinks/details/0/paths/1"),
        ("094.json", "fragment-in-path", "/applinks/details/0/components/0/~1"),
        ("002.json", "fragment-in-path", "/applinks/details/0/paths/0"),
        ("095.json", "query-in-path", "/applinks/details/0/paths/1"),
        ("019.json", "paths-and-components", "/applinks/details/0/paths"),
        ("025.json", "app-id-and-app-ids", "/applinks/details/0/appID"),
        ("007.json", "app-id-placeholder", "/applinks/details/0/appID"),
    ])
    func notableFiles(name: String, code: String, location: String) throws {
        let entry = try #require(try Self.load().first { $0.name == name })
        let findings = AASALinter.lint(entry.bytes)
        #expect(findings.contains { $0.code == code && $0.location == location }, "\(findings.map { "\($0.code) \($0.location ?? "")" })")
    }

    @Test(arguments: ["005.json", "014.json", "017.json", "038.json", "043.json", "053.json", "086.json"])
    func cleanRealFilesHaveNoErrors(name: String) throws {
        let entry = try #require(try Self.load().first { $0.name == name })
        let findings = AASALinter.lint(entry.bytes)
        #expect(!findings.containsError, "\(findings.map(\.message))")
    }

    @Test func diffOfAFileWithItselfIsEmpty() throws {
        for entry in try Self.load() {
            guard let document = AASADecoder.decode(entry.bytes).document else { continue }
            #expect(AASADiff.changes(from: document, to: document).isEmpty, "\(entry.name)")
        }
    }

    // MARK: Seeded random mutations

    /// SplitMix64: a small deterministic generator, so failures reproduce.
    struct SeededGenerator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    static func mutate(_ input: [UInt8], using rng: inout SeededGenerator) -> [UInt8] {
        var bytes = input
        let interesting: [UInt8] = Array("{}[],:\"\\/*#?$()-0123456789eE.tfn \n\r\t".utf8) + [0x00, 0x7F, 0x80, 0xBF, 0xC0, 0xE2, 0xED, 0xEF, 0xF4, 0xFF]
        let steps = Int.random(in: 1...4, using: &rng)
        for _ in 0..<steps {
            guard !bytes.isEmpty else {
                bytes.append(interesting.randomElement(using: &rng) ?? 0x7B)
                continue
            }
            let i = Int.random(in: 0..<bytes.count, using: &rng)
            switch Int.random(in: 0..<7, using: &rng) {
            case 0: bytes[i] = interesting.randomElement(using: &rng) ?? 0
            case 1: bytes.remove(at: i)
            case 2: bytes.insert(interesting.randomElement(using: &rng) ?? 0, at: i)
            case 3: bytes.removeSubrange(i..<bytes.count)
            case 4:
                let j = Int.random(in: i..<min(bytes.count, i + 64), using: &rng)
                bytes.insert(contentsOf: bytes[i...j], at: Int.random(in: 0...bytes.count, using: &rng))
            case 5: bytes[i] ^= UInt8.random(in: 1...255, using: &rng)
            default:
                let j = Int.random(in: i..<min(bytes.count, i + 16), using: &rng)
                bytes.removeSubrange(i...j)
            }
        }
        return bytes
    }

    @Test func mutatedCorpusNeverCrashes() throws {
        let entries = try Self.load()
        var rng = SeededGenerator(state: 0xAA5A_F37C_0000_0001)
        var invalid = 0
        var decoded = 0
        for entry in entries {
            let original = AASADecoder.decode(entry.bytes).document
            for _ in 0..<40 {
                let bytes = Self.mutate(entry.bytes, using: &rng)
                let result = AASADecoder.decode(bytes)
                switch result {
                case .invalidJSON(let error, _):
                    invalid += 1
                    #expect(error.line >= 1 && error.column >= 1 && error.offset <= bytes.count)
                    #expect(JSONParser.position(of: error.offset, in: bytes) == JSONPosition(line: error.line, column: error.column, offset: error.offset))
                case .document(let document, _):
                    decoded += 1
                    if let original {
                        _ = AASADiff.changes(from: original, to: document)
                        _ = AASADiff.changes(from: document, to: original)
                    }
                case .notAnAssociationFile:
                    break
                }
                let findings = AASALinter.lint(bytes)
                #expect(findings.allSatisfy { !$0.code.isEmpty && !$0.message.isEmpty })
            }
        }
        #expect(invalid > 100)
        #expect(decoded > 100)
    }
}
