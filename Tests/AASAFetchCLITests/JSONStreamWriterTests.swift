@testable import AASAFetchCLI
import AASAFetchCore
import Foundation
import Testing

/// The streaming run writes the fetch document piece by piece; it must be byte for byte the
/// document of the whole report.
struct JSONStreamWriterTests {
    static func report(entries strings: [String?], failEvery: Int) throws -> RunReport {
        let plan = FetchPlan(entries: EntryParser().parse(strings), prioritizer: DomainPrioritizer(region: "DE"))
        let listed = try AASADecoder.decodeDocument(Array(#"{"applinks":{"details":[{"appIDs":["ABCDE12345.a.b"],"components":[]}]}}"#.utf8))
        let results = plan.fetches.enumerated().map { position, fetch in
            position % failEvery == 1
                ? HostFetchResult(host: fetch.host, route: .origin, url: "https://\(fetch.host)/x", code: "http-redirect", reason: "moved \u{1B}[31m",
                                  httpStatus: 301, redirectLocation: "https://elsewhere/", findings: [.error("http-redirect", "moved")],
                                  attempts: [FetchAttempt(url: "https://\(fetch.host)/x", httpStatus: 301, code: "ok", remoteAddress: nil, milliseconds: 3)],
                                  startOrder: position)
                : HostFetchResult(host: fetch.host, route: .origin, url: "https://\(fetch.host)/x", code: "ok", reason: "fetched",
                                  httpStatus: 200, document: listed, startOrder: position)
        }
        return AssociationJudge.report(plan: plan, results: results, appIDs: ["ABCDE12345.a.b"], appIDSource: .option, region: "DE",
                                       findings: [.warning("app-id-malformed", "odd")])
    }

    static func streamed(_ report: RunReport) throws -> String {
        var text = ""
        var writer = JSONStreamWriter(write: { text += $0 })
        try writer.begin(appIDs: report.appIDs, appIDSource: report.appIDSource, region: report.region, findings: report.findings)
        for domain in report.domains { try writer.domain(domain) }
        try writer.finish(entryCount: report.entries.count, entries: { body in try report.entries.forEach(body) }, summary: report.summary)
        return text
    }

    @Test(arguments: [
        [String?](),
        ["applinks:example.com"],
        ["applinks:example.com", "applinks:*.example.de", "webcredentials:bad:1", nil, "applinks:shop.example.fr"],
    ])
    func streamedDocumentIsTheWholeDocument(entries: [String?]) throws {
        let report = try Self.report(entries: entries, failEvery: 2)
        let whole = try JSONOutput.string(report) + "\n"
        #expect(try Self.streamed(report) == whole)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(whole.utf8)) as? [String: Any])
        #expect(object["schemaVersion"] as? Int == 1)
        #expect(whole.hasPrefix("{\n  \"schemaVersion\": 1,\n"))
    }
}
