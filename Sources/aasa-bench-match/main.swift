// Measures URL decisions per second on one core (run in release mode):
//   swift run -c release aasa-bench-match [--testdata DIR] [--seconds S] [--scenario a|b|c] [--decisions N]
// `--decisions N` runs exactly N decisions per scenario instead of a time budget, for counting
// instructions independently of the machine's load (valgrind --tool=callgrind, minus a run with 0).
// (a) the Apple overview file of the conformance set, its cases' URLs cycled;
// (b) the biggest file in testdata/corpus/aasa, with URLs derived from its own patterns;
// (c) a generated ~128 KiB file with a thousand components.
import AASAFetchCore
import Foundation

struct Options {
    var testdata = URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent("testdata")
    var seconds = 1.0
    var decisions: Int?
    var scenarios: Set<String> = ["a", "b", "c"]

    init(arguments: [String]) {
        if let env = ProcessInfo.processInfo.environment["AASA_TESTDATA_DIR"] { testdata = URL(fileURLWithPath: env) }
        var index = 1
        while index < arguments.count {
            switch arguments[index] {
            case "--testdata" where index + 1 < arguments.count:
                testdata = URL(fileURLWithPath: arguments[index + 1])
                index += 1
            case "--seconds" where index + 1 < arguments.count:
                seconds = Double(arguments[index + 1]) ?? seconds
                index += 1
            case "--decisions" where index + 1 < arguments.count:
                decisions = Int(arguments[index + 1])
                index += 1
            case "--scenario" where index + 1 < arguments.count:
                scenarios = Set(arguments[index + 1].split(separator: ",").map(String.init))
                index += 1
            default:
                break
            }
            index += 1
        }
    }
}

struct Scenario {
    let name: String
    let fileBytes: Int
    let matcher: URLMatcher
    let requests: [(url: String, appID: String)]
}

/// Runs exactly `count` decisions, cycling through the scenario's requests.
func run(_ scenario: Scenario, decisions count: Int) {
    var sink = 0
    var done = 0
    let clock = ContinuousClock()
    let start = clock.now
    while done < count {
        for request in scenario.requests where done < count {
            sink &+= scenario.matcher.decide(url: request.url, appID: request.appID).decision == .match ? 1 : 0
            done += 1
        }
    }
    print("\(scenario.name): \(done) decisions in \(clock.now - start) [\(sink & 1)]")
}

func measure(_ scenario: Scenario, seconds: Double) {
    var counts: [MatchDecision: Int] = [:]
    for request in scenario.requests { counts[scenario.matcher.decide(url: request.url, appID: request.appID).decision, default: 0] += 1 }
    let clock = ContinuousClock()
    var decisions = 0
    var sink = 0
    let start = clock.now
    let budget = Duration.milliseconds(Int(seconds * 1000))
    while clock.now - start < budget {
        for request in scenario.requests {
            sink &+= scenario.matcher.decide(url: request.url, appID: request.appID).decision == .match ? 1 : 0
        }
        decisions += scenario.requests.count
    }
    let elapsed = clock.now - start
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    let rate = Double(decisions) / seconds
    let mix = MatchDecision.allCases.map { "\($0.rawValue) \(counts[$0, default: 0])" }.joined(separator: ", ")
    print(String(format: "%@: %.0f decisions/s (%d URLs, file %d bytes; %@) [%d]", scenario.name, rate, scenario.requests.count, scenario.fileBytes, mix, sink & 1))
}

func overviewScenario(_ options: Options) throws -> Scenario {
    let data = try Data(contentsOf: options.testdata.appendingPathComponent("conformance/cases.json"))
    guard let root = try JSONSerialization.jsonObject(with: data) as? [String: Any],
          let cases = root["matching"] as? [[String: Any]] else { throw CocoaError(.fileReadCorruptFile) }
    let overview = cases.filter { ($0["name"] as? String)?.hasPrefix("apple/overview/") == true }
    guard let first = overview.first, let aasa = first["aasa"], let domain = first["domain"] as? String else {
        throw CocoaError(.fileReadCorruptFile)
    }
    let bytes = try JSONSerialization.data(withJSONObject: aasa)
    let compiled = CompiledAssociation(document: try BenchModel.document(data: bytes))
    let requests = overview.compactMap { entry -> (String, String)? in
        guard let url = entry["url"] as? String, let app = entry["appId"] as? String else { return nil }
        return (url, app)
    }
    return Scenario(name: "(a) apple overview", fileBytes: bytes.count,
                    matcher: URLMatcher(entitlementDomains: [domain], files: [domain: compiled]), requests: requests)
}

/// URLs derived from a pattern: wildcards filled in, plus near misses.
func sampleURLs(for path: String) -> [String] {
    var filled = ""
    var index = path.startIndex
    while index < path.endIndex {
        let character = path[index]
        if character == "$", let close = path[index...].firstIndex(of: ")") {
            filled += "en"
            index = path.index(after: close)
            continue
        }
        switch character {
        case "*": filled += "item/42"
        case "?": filled += "x"
        default: filled.append(character)
        }
        index = path.index(after: index)
    }
    if !filled.hasPrefix("/") { filled = "/" + filled }
    let safe = filled.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? "/"
    return ["https://example.com" + safe, "https://example.com" + safe + "?utm_source=x#top", "https://example.com" + safe.uppercased()]
}

func corpusScenario(_ options: Options) throws -> Scenario {
    let folder = options.testdata.appendingPathComponent("corpus/aasa")
    let files = try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: [.fileSizeKey])
    let biggest = try files.max { a, b in
        (try a.resourceValues(forKeys: [.fileSizeKey]).fileSize ?? 0) < (try b.resourceValues(forKeys: [.fileSizeKey]).fileSize ?? 0)
    }
    guard let biggest else { throw CocoaError(.fileNoSuchFile) }
    let data = try Data(contentsOf: biggest)
    let document = try BenchModel.document(data: data)
    let compiled = CompiledAssociation(document: document)
    var requests: [(String, String)] = []
    let apps = document.appIDs(for: .applinks)
    for detail in document.applinks?.details ?? [] {
        let paths = (detail.components?.compactMap(\.path) ?? []) + (detail.paths ?? []).map { $0.hasPrefix("NOT ") ? String($0.dropFirst(4)) : $0 }
        for path in paths {
            for url in sampleURLs(for: path) {
                for app in apps.prefix(2) { requests.append((url, app)) }
            }
        }
    }
    requests.append(("https://example.com/definitely/not/here", apps.first ?? "A.b"))
    return Scenario(name: "(b) corpus \(biggest.lastPathComponent)", fileBytes: data.count,
                    matcher: URLMatcher(entitlementDomains: ["example.com"], files: ["example.com": compiled]), requests: requests)
}

func generatedScenario() throws -> Scenario {
    let app = "ABCDE12345.com.example.big"
    var components: [String] = []
    for index in 0..<1000 {
        let comment = "\"comment\":\"rule \(index) generated for the benchmark: keeps the file near the size limit\""
        switch index % 8 {
        case 0: components.append("{\"/\":\"/section-\(index)/*\",\(comment)}")
        case 1: components.append("{\"/\":\"/items/\(index)/?*/detail\",\"?\":{\"ref\":\"?*\"},\(comment)}")
        case 2: components.append("{\"/\":\"/Case-\(index)/*\",\"caseSensitive\":false,\(comment)}")
        case 3: components.append("{\"/\":\"/$(lang)_$(region)/shop-\(index)/$(food)\",\(comment)}")
        case 4: components.append("{\"/\":\"/blocked-\(index)/*\",\"exclude\":true,\(comment)}")
        case 5: components.append("{\"/\":\"/p/\(index)\",\"#\":\"frag-*\",\(comment)}")
        case 6: components.append("{\"/\":\"/caf\\u00e9-\(index)/*\",\"percentEncoded\":false,\(comment)}")
        default: components.append("{\"/\":\"/docs-\(index)/*/v?/*.html\",\"?\":\"lang=*\",\(comment)}")
        }
    }
    let json = """
    {"applinks":{"substitutionVariables":{"food":["burrito","pizza","sushi","samosa","ramen","tacos"]},
    "details":[{"appIDs":["\(app)"],"components":[\(components.joined(separator: ",\n"))]}]}}
    """
    let document = try BenchModel.document(json: json)
    let compiled = CompiledAssociation(document: document)
    var requests: [(String, String)] = []
    for index in stride(from: 3, to: 1000, by: 37) {
        switch index % 8 {
        case 0: requests.append(("https://example.com/section-\(index)/a/b", app))
        case 1: requests.append(("https://example.com/items/\(index)/x/detail?ref=abc", app))
        case 2: requests.append(("https://example.com/CASE-\(index)/Thing", app))
        case 3: requests.append(("https://example.com/fr_CA/shop-\(index)/sushi", app))
        case 4: requests.append(("https://example.com/blocked-\(index)/x", app))
        case 5: requests.append(("https://example.com/p/\(index)#frag-1", app))
        case 6: requests.append(("https://example.com/caf%C3%A9-\(index)/menu", app))
        default: requests.append(("https://example.com/docs-\(index)/guide/v2/intro.html?lang=en", app))
        }
        requests.append(("https://example.com/nothing/\(index)/here?q=1", app))
    }
    return Scenario(name: "(c) generated 1000 components", fileBytes: json.utf8.count,
                    matcher: URLMatcher(entitlementDomains: ["example.com"], files: ["example.com": compiled]), requests: requests)
}

let options = Options(arguments: CommandLine.arguments)
do {
    var scenarios: [Scenario] = []
    if options.scenarios.contains("a") { scenarios.append(try overviewScenario(options)) }
    if options.scenarios.contains("b") { scenarios.append(try corpusScenario(options)) }
    if options.scenarios.contains("c") { scenarios.append(try generatedScenario()) }
    for scenario in scenarios {
        if let count = options.decisions {
            run(scenario, decisions: count)
        } else {
            measure(scenario, seconds: options.seconds)
        }
    }
} catch {
    FileHandle.standardError.write(Data("aasa-bench-match: \(error)\n".utf8))
    exit(2)
}
