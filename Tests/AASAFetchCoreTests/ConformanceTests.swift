import AASAFetchCore
import AASAFetchTestSupport
import Foundation
import Testing

/// One `matching` case of `conformance/cases.json`, read at run time.
struct ConformanceCase: CustomTestStringConvertible, Sendable {
    let name: String
    let note: String?
    let aasaJSON: Data
    let domain: String
    let appID: String
    let url: String
    let expect: MatchDecision

    var testDescription: String { name }

    static let all: [ConformanceCase] = {
        guard let data = try? Data(contentsOf: TestPaths.conformanceCases),
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
    }()

    static let rawCount: Int = {
        guard let data = try? Data(contentsOf: TestPaths.conformanceCases),
              let root = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let cases = root["matching"] as? [Any]
        else { return -1 }
        return cases.count
    }()
}

struct ConformanceTests {
    @Test func everyCaseIsLoaded() {
        #expect(ConformanceCase.all.count == ConformanceCase.rawCount)
        #expect(ConformanceCase.all.count >= 96)
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
