import AASAFetchCore
import AASAFetchTestSupport
import Foundation
import Testing

/// One `matching` case of `conformance/cases.json` or `conformance/local-cases.json`, read at run time.
struct ConformanceCase: CustomTestStringConvertible, Sendable {
    let name: String
    let note: String?
    let aasaJSON: Data
    let domain: String
    let appID: String
    let url: String
    let expect: MatchDecision

    var testDescription: String { name }

    /// The matching cases of `cases.json` and `local-cases.json`, in that order.
    static let all: [ConformanceCase] = TestPaths.allConformanceCases.flatMap(load)

    /// The number of `matching` entries in both files, whether they load or not.
    static let rawCount: Int = TestPaths.allConformanceCases.reduce(0) { sum, file in
        guard let data = try? Data(contentsOf: file),
              let root = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let cases = root["matching"] as? [Any]
        else { return sum - 1_000_000 }
        return sum + cases.count
    }

    private static func load(_ file: URL) -> [ConformanceCase] {
        guard let data = try? Data(contentsOf: file),
              let root = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let cases = root["matching"] as? [[String: Any]]
        else { return [] }
        return cases.compactMap { entry in
            guard let name = entry["name"] as? String, let aasa = entry["aasa"],
                  let json = try? JSONSerialization.data(withJSONObject: aasa, options: [.fragmentsAllowed]),
                  let domain = entry["domain"] as? String, let appID = entry["appId"] as? String,
                  let url = entry["url"] as? String, let expect = (entry["expect"] as? String).flatMap(MatchDecision.init(rawValue:))
            else { return nil }
            return ConformanceCase(
                name: name, note: entry["note"] as? String, aasaJSON: json, domain: domain, appID: appID, url: url, expect: expect
            )
        }
    }
}

struct ConformanceTests {
    @Test func everyCaseIsLoaded() {
        #expect(ConformanceCase.all.count == ConformanceCase.rawCount)
        #expect(ConformanceCase.all.count >= 96 + 54)
    }

    /// Our own cases never claim to be checked against Apple's tool, and cover every component
    /// key inherited from `defaults` at both levels.
    @Test func localCasesAreDocumentedOrDecidedAndCoverEveryKey() throws {
        let data = try Data(contentsOf: TestPaths.localConformanceCases)
        let root = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let cases = try #require(root["matching"] as? [[String: Any]])
        let names = Set(try cases.map { try #require($0["name"] as? String) })
        #expect(names.count == cases.count, "case names are unique")
        for entry in cases {
            let status = entry["status"] as? String
            #expect(status == "documented" || status == "decided", "\(entry["name"] ?? "?"): \(status ?? "none")")
            #expect(entry["oracle"] == nil)
        }
        let originals = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: TestPaths.conformanceCases)) as? [String: Any])
        let originalNames = Set(((originals["matching"] as? [[String: Any]]) ?? []).compactMap { $0["name"] as? String })
        #expect(names.isDisjoint(with: originalNames))
        // Every key, at both levels, inherited by a component that leaves it out.
        for level in ["applinks", "detail"] {
            for key in ["path", "query", "fragment", "exclude", "case-insensitive", "percent-decoded"] {
                #expect(names.contains { $0.hasPrefix("defaults-local/\(level)/\(key)") }, "\(level) \(key)")
            }
        }
    }

    /// The entitlement is `applinks:<domain>`; an empty domain skips the host check.
    @Test(arguments: ConformanceCase.all)
    func matching(_ testCase: ConformanceCase) throws {
        let document = try ModelFromJSON.document(data: testCase.aasaJSON)
        let compiled = CompiledAssociation(document: document)
        let decision: MatchDecision
        if testCase.domain.isEmpty {
            decision = compiled.decide(url: testCase.url, appID: testCase.appID).decision
        } else {
            let matcher = URLMatcher(entitlementDomains: ["applinks:" + testCase.domain], files: [testCase.domain: compiled])
            decision = matcher.decide(url: testCase.url, appID: testCase.appID).decision
        }
        #expect(decision == testCase.expect, "\(testCase.name): \(testCase.url) — \(testCase.note ?? "")")
        // The line-protocol entry point agrees.
        #expect(compiled.decide(url: testCase.url, appID: testCase.appID, domain: testCase.domain).decision == testCase.expect)
    }
}
