import AASAFetchCore
import Foundation
import Testing

/// The verdict `show` gives a stored host is the one a run gives: the download's failure, else
/// `app-not-listed` per entry and app ID, else `ok`; unjudged without an app ID.
struct StoredVerdictTests {
    static let app = RefreshPolicyTests.app
    static let other = "ZYXWV98765.com.example.other"

    static func need(_ appID: String, service: Service = .applinks) -> EntryNeed {
        EntryNeed(entry: "\(service.name):example.com", service: service, host: "example.com", appID: appID)
    }

    @Test func listedAndNotListedPerAppID() {
        let state = RefreshPolicyTests.state(approved: RefreshPolicyTests.other)
        let verdict = StoredVerdict(state: state, needs: [Self.need(Self.other), Self.need(Self.app)])
        #expect(verdict.associated == false)
        #expect(verdict.code == "app-not-listed")
        #expect(verdict.associations.map(\.associated) == [true, false])
        #expect(verdict.associations.map(\.code) == ["ok", "app-not-listed"])
        #expect(verdict.associations[1].reason == "\(Self.app) is not listed for applinks in the file of example.com (it lists \(Self.other))")

        let listed = StoredVerdict(state: RefreshPolicyTests.state(approved: RefreshPolicyTests.good), needs: [Self.need(Self.app)])
        #expect(listed.associated == true && listed.code == "ok")

        // A file listing many app IDs names five and counts the rest (every one made a line of
        // 95,000 characters per entry).
        let many = (0..<3000).map { "ABCDE12345.com.example.app\($0)" }
        let crowded = #"{"applinks":{"details":[{"appIDs":["# + many.map { "\"\($0)\"" }.joined(separator: ",") + #"],"components":[{"/":"*"}]}]}}"#
        let long = StoredVerdict(state: RefreshPolicyTests.state(approved: crowded), needs: [Self.need(Self.app)])
        #expect((long.associations[0].reason ?? "").hasSuffix("(it lists \(many.prefix(5).joined(separator: ", ")) and 2995 more)"), "\((long.associations[0].reason ?? "").prefix(300))")
    }

    /// A stored result is judged as the run judged it: a signed file (stored as its content,
    /// beside its CMS media type) keeps its `signed-file` warning and its app IDs (it was
    /// `invalid-json`, so the report called the host unjudged), and a file found only at the
    /// legacy root path keeps its `legacy-root-path` warning.
    @Test func aStoredSignedOrLegacyFileIsJudgedAsTheRunJudgedIt() {
        var signed = RefreshPolicyTests.state(approved: RefreshPolicyTests.good)
        signed.lastResult = StoredResult(code: "ok", reason: "HTTP 200, 900 bytes", httpStatus: 200,
                                         url: "https://example.com/.well-known/apple-app-site-association",
                                         headers: [HTTPHeader(name: "Content-Type", value: "application/pkcs7-mime")],
                                         body: Array(RefreshPolicyTests.good.utf8), fetchedAt: RefreshPolicyTests.t0)
        let verdict = StoredVerdict(state: signed, needs: [Self.need(Self.app)])
        #expect(verdict.status == .associates, "\(verdict.findings)")
        #expect(verdict.findings.map(\.code) == ["signed-file"])

        var legacy = RefreshPolicyTests.state(approved: RefreshPolicyTests.good)
        legacy.lastResult = StoredResult(code: "ok", reason: "HTTP 200", httpStatus: 200, url: "https://example.com/apple-app-site-association",
                                         headers: [HTTPHeader(name: "Content-Type", value: "application/json")],
                                         body: Array(RefreshPolicyTests.good.utf8), fetchedAt: RefreshPolicyTests.t0)
        let old = StoredVerdict(state: legacy, needs: [Self.need(Self.app)])
        #expect(old.status == .associates)
        #expect(old.findings.map(\.code) == ["legacy-root-path"])
    }

    @Test func theServiceOfTheEntryDecides() {
        let file = #"{"webcredentials":{"apps":["ABCDE12345.com.example.app"]},"applinks":{"details":[]}}"#
        let verdict = StoredVerdict(state: RefreshPolicyTests.state(approved: file),
                                    needs: [Self.need(Self.app, service: .webcredentials), Self.need(Self.app)])
        #expect(verdict.associations.map(\.associated) == [true, false])
        #expect(verdict.associations[1].reason?.contains("listed only under webcredentials") == true)
    }

    @Test func failuresUnknownAppsAndNeverFetched() {
        // A failing host keeps its last approved file, but associates nothing (as in a run).
        let failing = StoredVerdict(state: RefreshPolicyTests.state(approved: RefreshPolicyTests.good, lastCode: "http-server-error"),
                                    needs: [Self.need(Self.app)])
        #expect(failing.associated == false && failing.code == "http-server-error")
        #expect(failing.associations.first?.code == "http-server-error")

        let unknown = StoredVerdict(state: RefreshPolicyTests.state(approved: RefreshPolicyTests.good), needs: [Self.need("")])
        #expect(unknown.associated == nil && unknown.code == "ok")
        #expect(unknown.associations.first?.appID == nil)
        // `show`'s list loads no body for a host no app ID needs: it is still `ok`, unjudged.
        let unloaded = StoredVerdict(state: RefreshPolicyTests.state(approved: nil), needs: [Self.need("")])
        #expect(unloaded.associated == nil && unloaded.code == "ok", "\(unloaded.associations)")
        #expect(unloaded.associations.first?.code == "ok")

        let never = StoredVerdict(state: RefreshPolicyTests.state(approved: nil, lastCode: nil), needs: [Self.need(Self.app)])
        #expect(never.associated == nil && never.code == nil)
        #expect(never.associations.first?.code == "not-fetched")
    }
}
