// Seeded random fuzz driver for the file decoder, the linter, the pattern compiler, the URL
// splitter and the matcher. It must never crash (a crash is the failure signal); it also checks
// two invariants of the matcher.
//   swift run -c release aasa-fuzz [iterations] [seed] [corpus-dir]
// The decoder phase mutates every file of corpus-dir (default testdata/corpus/aasa) bytewise.
import AASAFetchCore
import Foundation

/// SplitMix64, so a run is reproducible from its seed.
struct Generator: RandomNumberGenerator {
    var state: UInt64

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var value = state
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }

    mutating func pick<T>(_ values: [T]) -> T {
        values[Int.random(in: 0..<values.count, using: &self)]
    }

    mutating func text(_ pieces: [String], maxPieces: Int) -> String {
        (0..<Int.random(in: 0...maxPieces, using: &self)).map { _ in pick(pieces) }.joined()
    }
}

let patternPieces = ["*", "?", "?*", "/", "a", "B", "%20", "%2F", "%c3%a9", "é", "中", "😀", "$(", ")", "$(lang)", "$(region)",
                     "$(digit)", "$(v)", "$(w x)", "$(undefined)", "$", "(", "\\", "\u{0}", "NOT ", ".", "-", "="]
let urlPieces = ["/", "a", "B", "?", "#", "&", "=", "%", "%2", "%20", "%2F", "%C3%A9", "%FF", "é", "中", "😀", " ", "+", ":", "@",
                 "[", "]", "\u{0}", "\u{7F}", "..", "en_US", "GB", "42", "\\", "\""]
let prefixes = ["https://example.com", "http://EXAMPLE.com.", "https://a.example.com", "https://[::1]:8080", "https://bücher.example",
                "ftp://example.com", "https:", "https://", "example.com", "", "https://user@example.com:1"]

let arguments = CommandLine.arguments
let iterations = arguments.count > 1 ? Int(arguments[1]) ?? 20000 : 20000
let seed = arguments.count > 2 ? UInt64(arguments[2]) ?? 1 : 1
var random = Generator(state: seed)
var matches = 0
let app = "ABCDE12345.com.example.app"

for iteration in 0..<iterations {
    let variables = ["v": (0..<Int.random(in: 0...5, using: &random)).map { _ in random.text(patternPieces, maxPieces: 4) },
                     "w x": [random.text(patternPieces, maxPieces: 3)]]
    var rules: [ComponentRule] = []
    for _ in 0..<Int.random(in: 0...5, using: &random) {
        let query: QueryPattern? = switch Int.random(in: 0...3, using: &random) {
        case 0: nil
        case 1: .string(random.text(patternPieces, maxPieces: 5))
        case 2: .items([QueryItemPattern(name: random.text(urlPieces, maxPieces: 2), pattern: random.text(patternPieces, maxPieces: 4))])
        default: .ignored
        }
        rules.append(ComponentRule(
            path: Bool.random(using: &random) ? random.text(patternPieces, maxPieces: 8) : nil,
            query: query,
            fragment: Bool.random(using: &random) ? random.text(patternPieces, maxPieces: 4) : nil,
            exclude: Bool.random(using: &random),
            options: ComponentDefaults(caseSensitive: random.pick([nil, true, false]), percentEncoded: random.pick([nil, true, false]))
        ))
    }
    let legacy = (0..<Int.random(in: 0...3, using: &random)).map { _ in random.text(patternPieces, maxPieces: 6) }
    let details = [
        AppLinksDetail(appIDs: [app], components: Bool.random(using: &random) ? rules : nil, paths: legacy),
        AppLinksDetail(appIDs: [app, "OTHER12345.x"], components: rules.reversed()),
    ]
    let document = AASADocument(applinks: AppLinks(
        details: details, defaults: ComponentDefaults(caseSensitive: random.pick([nil, false])), substitutionVariables: variables
    ))
    let compiled = CompiledAssociation(document: document)
    let matcher = URLMatcher(entitlementDomains: ["example.com", "*.example.com", "applinks:[::1]?mode=developer"],
                             files: ["example.com": compiled, "[::1]": compiled])
    for _ in 0..<4 {
        let url = random.pick(prefixes) + random.text(urlPieces, maxPieces: 12)
        let outcome = matcher.decide(url: url, appID: app)
        let explanation = matcher.explain(url: url, appID: app)
        // Invariant: explaining never changes the decision.
        if explanation.decision != outcome.decision {
            exitProcess("MISMATCH seed \(seed) iteration \(iteration): \(url) decide \(outcome.decision) explain \(explanation.decision) \(document)")
        }
        if outcome.decision == .match { matches += 1 }
        _ = compiled.decide(url: url, appID: app, domain: random.pick(["", "example.com"]))
        _ = URLParts(url)?.queryItems
        let pattern = CompiledPattern(random.text(patternPieces, maxPieces: 10), role: random.pick([.path, .plain]),
                                      caseSensitive: Bool.random(using: &random), variables: variables)
        let text = random.text(urlPieces, maxPieces: 10)
        // Invariant: the work is linear in the text (no backtracking blow-up).
        let cost = pattern.matchCost(text)
        if cost.steps > 1_000_000 {
            exitProcess("COST seed \(seed) iteration \(iteration): \(pattern.source) ~ \(text) steps \(cost.steps)")
        }
    }
}
// Decoder phase: byte-level mutations of real files through the decoder, linter and matcher.
let corpusPath = arguments.count > 3 ? arguments[3] : "testdata/corpus/aasa"
let corpusFiles: [[UInt8]] = ((try? FileManager.default.contentsOfDirectory(atPath: corpusPath)) ?? []).sorted().compactMap {
    FileManager.default.contents(atPath: corpusPath + "/" + $0).map { [UInt8]($0) }
}
var decoded = 0
let tokens: [[UInt8]] = ["{", "}", "[", "]", ",", ":", "\"", "\\u", "\\uD800", "null", "true", "1e999", "-0", "\u{FEFF}",
                         "\"appIDs\"", "\"components\"", "\"paths\"", "\"/\"", "\"?\"", "\"#\"", "\"$(\"", "\"*\"", "\u{0}", "\u{FF}"]
    .map { Array($0.utf8) }
for iteration in 0..<(corpusFiles.isEmpty ? 0 : iterations / 4) {
    var bytes = random.pick(corpusFiles)
    for _ in 0..<Int.random(in: 1...3, using: &random) {
        guard !bytes.isEmpty else { break }
        let at = Int.random(in: 0..<bytes.count, using: &random)
        switch Int.random(in: 0...19, using: &random) {
        case 0: bytes = Array(bytes.prefix(at))
        case 1...4: bytes[at] = UInt8.random(in: 0...255, using: &random)
        case 5...7: bytes.remove(at: at)
        case 8...13:
            // A character inside a string: keeps the JSON valid more often and reaches the decoder.
            if let quote = bytes[at...].firstIndex(of: UInt8(ascii: "\"")), quote + 1 < bytes.count {
                bytes.insert(random.pick(Array("*?/$()%#aZ".utf8)), at: quote + 1)
            }
        case 14...16: bytes.insert(contentsOf: random.pick(tokens), at: at)
        default: bytes.insert(contentsOf: bytes[at..<min(bytes.count, at + 64)], at: at)
        }
    }
    _ = AASALinter.lint(bytes)
    if case .document(let document, _) = AASADecoder.decode(bytes) {
        decoded += 1
        let compiled = CompiledAssociation(document: document)
        for appID in document.appIDs(for: .applinks).prefix(2) {
            let url = random.pick(prefixes) + random.text(urlPieces, maxPieces: 8)
            if compiled.decide(url: url, appID: appID).decision != compiled.explain(url: url, appID: appID).decision {
                exitProcess("MISMATCH in decoder phase, seed \(seed) iteration \(iteration): \(url)")
            }
        }
    }
}
print("aasa-fuzz: \(iterations) iterations, seed \(seed), \(matches) matches; \(iterations / 4) mutated files from \(corpusFiles.count), \(decoded) decoded; no crash")

func exitProcess(_ message: String) -> Never {
    fatalError("fuzz invariant violated: " + message)
}
