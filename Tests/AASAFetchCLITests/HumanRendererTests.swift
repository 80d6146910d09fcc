@testable import AASAFetchCLI
@testable import AASAFetchCore
import Foundation
import Testing

/// The human renderers as pure functions of their input: lines collected, no colour.
struct HumanRendererTests {
    /// Collects what a renderer emits.
    final class Lines {
        var all: [String] = []
        func emit(_ line: String) { all.append(line) }
    }

    static let console = Console(colors: false)

    static func domain(_ host: String, status: Int? = 200, code: String = "ok", associated: Bool? = true, route: Route = .origin,
                       reason: String = "HTTP 200, 100 bytes", findings: [Finding] = [], entries: [String]? = nil) -> DomainReport {
        DomainReport(host: host, entries: entries ?? ["applinks:\(host)"], route: route, tier: 0, startOrder: 0, associated: associated,
                     code: code, reason: reason, httpStatus: status, url: "https://\(host)/.well-known/apple-app-site-association",
                     redirectLocation: nil, contentType: "application/json", bytes: 100, appIDs: [:], reliesOnExtraCA: false,
                     findings: findings, attempts: [])
    }

    static func summary(entries: Int, domains: Int, associated: Int, failed: Int, unjudged: Int = 0, warnings: Int = 0) -> RunSummary {
        RunSummary(entries: entries, domains: domains, associated: associated, failed: failed, unjudged: unjudged, warnings: warnings)
    }

    /// Renders a run the way `fetch` prints it.
    static func render(_ domains: [DomainReport], summary: RunSummary, findings: [Finding] = [], entries: [EntryVerdict] = []) -> [String] {
        let lines = Lines()
        var run = RunRenderer(console: console, hostWidth: RunRenderer.width(for: domains.map(RunRenderer.label)), emit: lines.emit)
        run.begin(entries: summary.entries, hosts: summary.domains, appIDs: ["ABCDE12345.com.example.app"], findings: findings)
        for domain in domains { run.domain(domain) }
        run.finish(entries: entries, summary: summary)
        return lines.all
    }

    /// The column at which `text` starts in `line`.
    static func column(of text: String, in line: String) throws -> Int {
        let range = try #require(line.range(of: text), "\(text) not in \(line)")
        return line.distance(from: line.startIndex, to: range.lowerBound)
    }

    @Test func columnsAlignWithTheLongestHostAndCode() throws {
        let long = "a-really-long-subdomain-name.for-testing.example.com"  // longer than the old 40-column cap
        let lines = Self.render([
            Self.domain("example.com"),
            Self.domain(long, status: 200, code: "not-an-association-file", associated: false, reason: "valid JSON but not an association file"),
            Self.domain("cdn.example.com", status: nil, code: "cdn-unreachable", associated: false, route: .cdn, reason: "no connection"),
        ], summary: Self.summary(entries: 3, domains: 3, associated: 1, failed: 2))
        let rows = lines.filter { $0.hasPrefix("✔") || $0.hasPrefix("✘") }
        #expect(rows.count == 3)
        let statuses = try [(rows[0], "200"), (rows[1], "200"), (rows[2], "---")].map { try Self.column(of: $0.1, in: $0.0) }
        #expect(Set(statuses).count == 1, "\(rows)")
        #expect(statuses[0] == 2 + long.count + 2)
        let codes = try [(rows[0], " ok "), (rows[1], " not-an-association-file"), (rows[2], " cdn-unreachable")].map { try Self.column(of: $0.1, in: $0.0) + 1 }
        #expect(Set(codes).count == 1, "\(rows)")
        let entries = try [(rows[0], "applinks:example.com"), (rows[1], "applinks:\(long)"), (rows[2], "applinks:cdn.example.com")]
            .map { try Self.column(of: $0.1, in: $0.0) }
        #expect(Set(entries).count == 1, "\(rows)")
        #expect(rows[2].contains("cdn.example.com (cdn)"))
        // Every code a host line can show fits its column.
        #expect(RunRenderer.hostLineCodes.allSatisfy { $0.count <= RunRenderer.codeWidth })
        #expect(RunRenderer.codeWidth == "not-an-association-file".count)
    }

    /// Cells keep two spaces before the next column whatever their text (an unfetchable entry as
    /// long as the host column ran into it: `applinks:e.test:8080---`), and pad by the columns the
    /// terminal shows: escaped text, wide characters as two, combining marks as none.
    @Test func cellsKeepTheirGapAndCountWhatTheTerminalShows() {
        let renderer = HumanRenderer(console: Self.console, emit: { _ in })
        #expect(renderer.cell("applinks:e.test:8080", 10) == "applinks:e.test:8080  ")
        #expect(renderer.cell("e.test", 10) == "e.test    ")
        #expect(renderer.cell("abcdefghi", 10) == "abcdefghi  ")
        #expect(HumanRenderer.columns("例子.test") == 9)
        #expect(HumanRenderer.columns("e\u{0301}.test") == 6)
        // Emoji shown as emoji take two columns wherever they are (🚀 and ☕ took one).
        #expect(HumanRenderer.columns("🚀🛒☕.test") == 11)
        #expect(HumanRenderer.columns("😀.test") == 7)
        #expect(HumanRenderer.columns("☀.test") == 6, "text presentation by default: one column")
        #expect(renderer.pad("例子.test", 12) == "例子.test   ")
        #expect(renderer.pad("\u{1B}[2J", 8) == "\\x1B[2J ")
    }

    @Test func pluralsAreRight() {
        let one = Self.render([Self.domain("example.com")], summary: Self.summary(entries: 1, domains: 1, associated: 1, failed: 0, warnings: 1))
        #expect(one.first == "1 entry, 1 host, app ABCDE12345.com.example.app")
        #expect(one.last == "1 of 1 entry associates, 1 warning")
        let many = Self.render([Self.domain("example.com"), Self.domain("b.example.com", code: "app-not-listed", associated: false, reason: "not listed")],
                               summary: Self.summary(entries: 3, domains: 2, associated: 2, failed: 1, unjudged: 0, warnings: 2))
        #expect(many.first == "3 entries, 2 hosts, app ABCDE12345.com.example.app")
        #expect(many.last == "2 of 3 entries associate, 1 fails, 2 warnings")
        #expect(Plural.count(0, "entry", "entries") == "0 entries")
        #expect(Plural.count(1, "difference") == "1 difference")
        #expect(RunRenderer.tally(associated: 0, entries: 2, failed: 2, failureCodes: ["http-redirect"], unjudged: 0, warnings: 0, console: Self.console)
            == "0 of 2 entries associate, 2 fail (http-redirect)")
    }

    /// The decoder's and the downloader's `invalid-json` findings say one fact: printed once, as
    /// the reason, with the most specific fix.
    @Test func oneFactIsPrintedOnce() {
        let decoder = Finding.error("invalid-json", "invalid JSON at line 4, column 77: trailing comma", location: "4:77", fix: "Remove the comma after the last element.")
        let downloader = Finding.error("invalid-json", "the body is not valid JSON (line 4, column 77: trailing comma)",
                                       location: "https://bad.example.com/.well-known/apple-app-site-association", fix: "fix the JSON syntax")
        let other = Finding.warning("content-type", "served as 'text/plain'; Apple expects application/json", fix: "serve it as application/json")
        let lines = Self.render([Self.domain("bad.example.com", code: "invalid-json", associated: false,
                                             reason: downloader.message, findings: [decoder, downloader, other])],
                               summary: Self.summary(entries: 1, domains: 1, associated: 0, failed: 1, warnings: 1))
        #expect(lines.filter { $0.contains("line 4, column 77") }.count == 1, "\(lines)")
        #expect(lines.filter { $0.contains("fix:") }.count == 2, "\(lines)")
        #expect(lines.contains("    the body is not valid JSON (line 4, column 77: trailing comma)"))
        #expect(lines.contains("      fix: Remove the comma after the last element."))
        #expect(!lines.contains { $0.contains("fix the JSON syntax") })
        #expect(lines.contains("    warning content-type: served as 'text/plain'; Apple expects application/json"))
    }

    /// One style for fix lines: `fix:` two spaces under the fact it fixes, in every renderer.
    @Test func fixLinesHaveOneStyle() {
        let redirect = Self.render([Self.domain("www.example.com", status: 301, code: "http-redirect", associated: false, reason: "HTTP 301 redirect",
                                                findings: [.error("http-redirect", "HTTP 301 redirect", fix: "serve the file itself"),
                                                           .warning("legacy-root-path", "served only at the root", fix: "serve it at .well-known")])],
                                   summary: Self.summary(entries: 1, domains: 1, associated: 0, failed: 1, warnings: 1))
        #expect(redirect.contains("    HTTP 301 redirect"))
        #expect(redirect.contains("      fix: serve the file itself"))
        #expect(redirect.contains("    warning legacy-root-path: served only at the root"))
        #expect(redirect.contains("      fix: serve it at .well-known"))

        let lines = Lines()
        let plan = PlanOutput(region: nil, appIDs: [], entries: [EntryVerdict(parsed: EntryParser().parse("applinks:https://x.test/", index: 0))],
                              fetches: [], findings: [])
        HumanRenderer(console: Self.console, emit: lines.emit).renderPlan(plan)
        let error = lines.all.firstIndex { $0.contains("error entitlement-scheme") }
        #expect(error.map { lines.all[$0 + 1].hasPrefix("      fix: ") } == true, "\(lines.all)")
        #expect(lines.all.contains("1 entry:"))
        #expect(lines.all.contains("0 downloads, in start order:"))

        // lint: the same shape.
        let report = Lint.report(files: ["bad.json"], options: LintOptions()) { _ in Array("{\"applinks\":{\"details\":[],}}".utf8) }
        let lint = Lint.render(report, console: Self.console)
        let finding = lint.firstIndex { $0.hasPrefix("  error invalid-json") }
        #expect(finding.map { lint[$0 + 1].hasPrefix("    fix: ") } == true, "\(lint)")
    }

    static func diagnosis(_ entry: String, failed: String?, code: String = "ok", associated: Bool?, warned: Int = 0) -> Diagnosis {
        var steps = [DiagnosisStep(step: "entitlement", title: "Entry", status: .passed, summary: "\(entry) is well formed")]
        steps += (0..<warned).map { _ in DiagnosisStep(step: "tls", title: "TLS", status: .warned, code: "custom-root", summary: "trusted through --cacert", fix: "use a public CA") }
        if let failed {
            steps.append(DiagnosisStep(step: failed, title: failed, status: .failed, code: code, summary: "it failed", details: ["what was seen"], fix: "change it"))
        }
        let host = String(entry.split(separator: ":").last ?? "")
        return Diagnosis(entry: entry, normalized: entry, service: .applinks, domain: host, host: host, mode: nil, developerMode: false,
                         route: .origin, url: nil, appIDs: ["ABCDE12345.com.example.app"], associated: associated, code: code,
                         failedStep: failed, steps: steps, userAgents: [], cdn: nil)
    }

    @Test func diagnoseEndsWithATally() {
        let report = DiagnosisReport(appIDs: ["ABCDE12345.com.example.app"], appIDSource: .entitlements, route: .origin, diagnoses: [
            Self.diagnosis("applinks:example.com", failed: nil, associated: true, warned: 1),
            Self.diagnosis("applinks:www.example.com", failed: "http", code: "http-redirect", associated: false, warned: 1),
            Self.diagnosis("applinks:old.example.com", failed: "association", code: "app-not-listed", associated: false),
            Self.diagnosis("applinks:new.example.com", failed: "http", code: "http-redirect", associated: false),
        ], findings: [])
        let lines = Lines()
        DiagnosisRenderer(console: Self.console, emit: lines.emit).render(report)
        #expect(lines.all.last == "1 of 4 entries associates, 3 fail (http-redirect, app-not-listed), 2 warnings", "\(lines.all)")
        // Steps line up; fixes sit two spaces under the step's text.
        #expect(lines.all.contains("  ✔ entitlement  applinks:example.com is well formed"))
        #expect(lines.all.contains("  ✘ http         it failed [http-redirect]"))
        #expect(lines.all.contains("      fix: change it"))
        // A fix is said once per entry: the user-agent check that repeats the http step's fix shows none.
        var repeated = Self.diagnosis("applinks:www.example.com", failed: "http", code: "user-agent-blocked", associated: false)
        repeated.steps.append(DiagnosisStep(step: "user-agent", title: "User agents", status: .failed, code: "user-agent-blocked",
                                            summary: "AASA-Bot gets HTTP 403", fix: "change it"))
        let once = Lines()
        DiagnosisRenderer(console: Self.console, emit: once.emit).render(
            DiagnosisReport(appIDs: [], appIDSource: .option, route: .origin, diagnoses: [repeated], findings: []))
        #expect(once.all.filter { $0 == "      fix: change it" }.count == 1, "\(once.all)")
        // One entry: its verdict line is the last word, no tally.
        let single = Lines()
        DiagnosisRenderer(console: Self.console, emit: single.emit).render(
            DiagnosisReport(appIDs: [], appIDSource: .option, route: .origin, diagnoses: [report.diagnoses[1]], findings: []))
        #expect(single.all.last == "✘ www.example.com does not associate: step http failed (http-redirect)")
    }

    @Test func entitlementsClosingLine() {
        let inspection = AppInspection(path: "A.entitlements", kind: .entitlements, findings: [])
        let clean = EntitlementsReport(inspection: inspection, project: nil, findings: [], differences: 0)
        #expect(AASAFetchCommand.Entitlements.closingLine(clean) == "ok")
        let compared = EntitlementsReport(inspection: inspection, project: .init(path: "B.entitlements", applicationIdentifier: nil, associatedDomains: []),
                                          findings: [.error("compare-missing-in-binary", "x")], differences: 1)
        #expect(AASAFetchCommand.Entitlements.closingLine(compared) == "1 error, 1 difference with B.entitlements")
    }
}
